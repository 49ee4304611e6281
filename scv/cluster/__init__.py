"""SCV on a Ray cluster: the nodes (`scv cluster`), their processes, and connecting as a client."""

# Where a node runs its tasks: set by the node (and by a private cluster), read by `scv batch --run-one`.
WORKSPACE_VARIABLE = "SCV_NODE_WORKSPACE"
