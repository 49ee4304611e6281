"""The chat channel a session serves for a bridge, and its system-prompt section. The archive's
format shared with the workers is in scv/core/chat/."""
