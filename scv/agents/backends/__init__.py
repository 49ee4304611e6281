"""The backends behind the `agent` tool: how one turn of a delegated agent runs. The tool chooses
the agent and checks the call; a backend runs it, so the model sees one schema and one result
shape whichever backend runs (base.py says what a backend is). Which one runs an agent was
decided when the session started (scv/agents/offered.py: the agent's transport)."""
