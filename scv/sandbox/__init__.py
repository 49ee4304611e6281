"""The opt-in OS sandbox for `bash` and delegated agents, supervisor side.

`choose` picks the request for a call from the configuration and what the kernel supports, which
`kernel` asks the mechanism to probe; `report` is `scv sandbox check`. The pure policy and rules
shared with the workers are in scv/core/sandbox/; the mechanism that applies a request to a
process lives in `workers/sandbox_linux.py`.
"""
