"""The events of a session, shared by `scv exec --json` (one `{"type": NAME, ...}` object per
line) and `scv server --stdio` (a notification `NAME` with the same params).

`ProgressThrottle` keeps `tool.progress` to at most two lines a second per call: a line that
comes sooner than that after the last one sent is held (a newer line replaces it); the held
line goes out when the window has passed (a timer, so a quiet tool does not hide its latest
state), or when the call ends.
"""

import threading
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


def _thread_timer(delay: float, due: Callable[[], None]) -> Callable[[], None]:
    timer = threading.Timer(delay, due)
    timer.daemon = True
    timer.start()
    return timer.cancel


class ProgressThrottle:
    def __init__(self, send: Callable[[str], None], interval: float = PROGRESS_INTERVAL,
                 clock: Callable[[], float] = time.monotonic,
                 start_timer: Callable[[float, Callable[[], None]], Callable[[], None]] = _thread_timer):
        self._send = send
        self._interval = interval
        self._clock = clock
        self._start_timer = start_timer     # (delay, due) -> cancel
        self._last: float | None = None
        self._held: str | None = None
        self._cancel_timer: Callable[[], None] | None = None
        # Held while sending, so a timer and the call's end never both send, and every line is
        # out before flush() returns (tool.progress always precedes tool.completed).
        self._lock = threading.Lock()

    def offer(self, line: str) -> None:
        with self._lock:
            now = self._clock()
            if self._last is None or now - self._last >= self._interval:
                self._held = None
                self._last = now
                self._send(line)
                return
            self._held = line
            if self._cancel_timer is None:
                self._cancel_timer = self._start_timer(self._interval - (now - self._last), self._due)

    def _due(self) -> None:
        """The window has passed: the held line, if still held, goes out."""
        with self._lock:
            self._cancel_timer = None
            if self._held is None:
                return
            now = self._clock()
            left = self._interval - (now - self._last) if self._last is not None else 0.0
            if left > 0:        # the timer fired a little early
                self._cancel_timer = self._start_timer(left, self._due)
                return
            line, self._held = self._held, None
            self._last = now
            self._send(line)

    def flush(self) -> None:
        """The call ended: the newest held line, if any, goes out now."""
        with self._lock:
            if self._cancel_timer is not None:
                self._cancel_timer()
                self._cancel_timer = None
            if self._held is not None:
                line, self._held = self._held, None
                self._last = self._clock()
                self._send(line)
