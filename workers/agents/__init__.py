"""Agent adapters: one descriptor per agent CLI, its environment, and its output parsers."""
