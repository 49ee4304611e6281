"""A session: its workspace and context (`context`), the system prompt (`prompt`), one turn of
model responses and tool calls (`turn_loop`), and each call's path from arguments to result
(`calls`). `scv exec`, `scv server --stdio` and the batch engines all run sessions."""
