"""Web access shared by the supervisor and the workers: the pure validators of URLs and
addresses, the auto-approve domain check, the `[web]` configuration, and the `Sources:` list
for hosted search citations. Nothing here touches the network."""
