"""The pure validators of web addresses: URLs (`urls`) and the addresses a host resolves to
(`addresses`). Nothing here touches the network."""
