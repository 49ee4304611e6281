"""The supervisor side of delegation: which agents a session offers, conversations with
SCV-issued handles, sign-in and imports of the agents' own credentials, and the system prompt's
"Delegating work" section. The agent settings schema is in scv/config/agents.py; the agent tool
and its backends in scv/tools/agent/."""
