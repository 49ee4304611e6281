"""The pure validators of web addresses: URLs (`urls`) and the addresses a host resolves to
(`addresses`). Nothing here touches the network."""

# The longest URL web_fetch takes; here, not in `urls`, so the tool's spec can declare it without
# loading the validator before a session's first model request.
MAX_URL_CHARS = 8192
