"""Background jobs: `agent` calls with `"background": true` that run on while the session goes
on, the `agent_wait`/`agent_status`/`agent_cancel` tools, and the report turns that tell the
model about jobs it has not seen finish."""
