"""The worker side of SCV: the fork point, one executor module per tool, and what they share."""
