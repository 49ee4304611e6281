"""The shared ground: what the supervisor and the workers both use.

Errors and exit statuses, frames and the messages between the two processes, the OS seam and the
one stop policy, the `SCV_PARENT` lineage, workspace paths and opening beneath a directory, URL and
address rules, the agent catalog and the agents' environment, delegation records, the chat
archive's format, and the sandbox's policy and rules.

The rule, checked by tests/test_layers.py: a module here imports only the standard library,
msgspec, idna and `scv.core` itself. `workers/` imports nothing of `scv` but this package.
"""
