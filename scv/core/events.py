"""The events of a session, shared by `scv exec --json` (one `{"type": NAME, ...}` object per
line) and `scv server --stdio` (a notification `NAME` with the same params).
`tool.progress` lines are kept to two a second per call by scv/core/progress.py.
"""

from typing import Any, Callable

EventSink = Callable[[str, dict[str, Any]], None]

TURN_STARTED = "turn.started"
ASSISTANT_DELTA = "assistant.delta"
ASSISTANT_TEXT = "assistant.text"
TOOL_STARTED = "tool.started"
TOOL_PROGRESS = "tool.progress"
TOOL_COMPLETED = "tool.completed"
APPROVAL_REQUESTED = "approval.requested"
APPROVAL_RESOLVED = "approval.resolved"
TURN_COMPLETED = "turn.completed"
TURN_FAILED = "turn.failed"
