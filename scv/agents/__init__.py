"""The supervisor side of delegation: which agents a session offers, the user's agent settings,
conversations with SCV-issued handles, and the system prompt's "Delegating work" section."""
