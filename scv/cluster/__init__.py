"""SCV on a Ray cluster: the nodes (`scv cluster`), their processes, and connecting as a client."""
