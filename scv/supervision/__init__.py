"""Running a call in a worker: the supervisor that owns the fork point (the one place `scv/`
imports `workers/`), the relay of one call as a state machine over the worker's pipes, live
workers that serve a conversation, and approval (the policy first, then the client)."""
