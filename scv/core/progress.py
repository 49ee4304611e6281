"""Progress lines, at most one per interval: the one throttle for a tool call's `tool.progress`
events (supervisor side) and a delegated agent's progress lines (worker side).

A line offered when the interval has passed since the last one sent goes out at once; one offered
sooner is held (a newer line replaces it: a status display wants the latest state, not a backlog),
and goes out when the interval has passed, by a timer, so a quiet tool does not hide its latest
state; `finish()` sends the held line at once when the call ends.
"""

import threading
import time
from typing import Callable

PROGRESS_INTERVAL = 0.5


def _thread_timer(delay: float, due: Callable[[], None]) -> Callable[[], None]:
    timer = threading.Timer(delay, due)
    timer.daemon = True
    timer.start()
    return timer.cancel


class ProgressThrottle:
    """`start_timer(delay, due)` arranges for `due()` to be called after `delay` seconds and returns
    a function that cancels it: a thread timer by default (the supervisor side); a worker, which
    starts no threads, passes its own wake-up."""

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
        # out before finish() returns (tool.progress always precedes tool.completed).
        self._lock = threading.Lock()

    def offer(self, line: str) -> None:
        if not line:
            return
        with self._lock:
            now = self._clock()
            if self._last is None or now - self._last >= self._interval:
                self._held = None
                self._last = now
                self._send(line)
                return
            self._held = line
            if self._cancel_timer is None:
                self._cancel_timer = self._start_timer(self._interval - (now - self._last), self.due)

    def due(self) -> None:
        """The window has passed: the held line, if still held, goes out."""
        with self._lock:
            self._cancel_timer = None
            if self._held is None:
                return
            now = self._clock()
            left = self._interval - (now - self._last) if self._last is not None else 0.0
            if left > 0:        # the timer fired a little early
                self._cancel_timer = self._start_timer(left, self.due)
                return
            line, self._held = self._held, None
            self._last = now
            self._send(line)

    def finish(self) -> None:
        """The call ended: the newest held line, if any, goes out now."""
        with self._lock:
            if self._cancel_timer is not None:
                self._cancel_timer()
                self._cancel_timer = None
            if self._held is not None:
                line, self._held = self._held, None
                self._last = self._clock()
                self._send(line)
