"""The `agent` tool (`tool`) and the backends behind it: how one turn of a delegated agent runs.
The tool chooses the agent and checks the call; a backend runs it, so the model sees one schema and
one result shape whichever backend runs (`backend` says what a backend is: `cli` runs the CLI once
per turn, `live` keeps a server for the conversation, `acp` and `nested` name its transport, and
`live_plan` plans the live server's command line). Which one runs an agent was decided when the
session started (scv/agents/offered.py: the agent's transport)."""
