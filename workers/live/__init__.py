"""Live agents: one agent process serves every turn of a conversation (ACP servers, a nested SCV)."""
