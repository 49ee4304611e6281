"""The opt-in OS sandbox for `bash` and delegated agents.

`policy` decides what a call may touch and `rules` turns that into Landlock rules, both pure
and shared with the workers; `choose` (supervisor side) picks the request for a call from the
configuration and what the kernel supports, which `kernel` asks the mechanism to probe. The
mechanism that applies a request to a process lives in `workers/sandbox_linux.py`.
"""
