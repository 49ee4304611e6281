"""The chat archive's format (one owner, `archive`), its layout of episodes, the reader behind
`chat_history`, and the refusals of `chat_attach`."""
