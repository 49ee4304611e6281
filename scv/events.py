"""The events of a session, shared by `scv exec --json` (one `{"type": NAME, ...}` object per
line) and `scv server --stdio` (a notification `NAME` with the same params).

`ProgressThrottle` keeps `tool.progress` to at most two lines a second per call: a line that
comes sooner than that after the last one sent is held (a newer line replaces it); the newest
line goes out with the first line after the window, or when the call ends.
"""

import time
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

PROGRESS_INTERVAL = 0.5


class ProgressThrottle:
    def __init__(self, send: Callable[[str], None], interval: float = PROGRESS_INTERVAL,
                 clock: Callable[[], float] = time.monotonic):
        self._send = send
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self._held: str | None = None

    def offer(self, line: str) -> None:
        now = self._clock()
        if self._last is None or now - self._last >= self._interval:
            self._held = None
            self._last = now
            self._send(line)
        else:
            self._held = line

    def flush(self) -> None:
        """The call ended: the newest held line, if any, goes out now."""
        if self._held is not None:
            line, self._held = self._held, None
            self._last = self._clock()
            self._send(line)
