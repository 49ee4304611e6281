"""Progress lines from an agent run: redacted, and forwarded at most twice a second.

Lines offered within the interval wait; the newest waiting line goes out once the interval has
passed (a status display wants the latest state, not a backlog). `wake(delay)` asks the run to
call `flush()` again after `delay` seconds, so a waiting line is not held while the CLI is quiet.
"""

import time
from typing import Callable

from workers.agents.redact import redact

INTERVAL_SECONDS = 0.5


class ProgressThrottle:
    def __init__(self, send: Callable[[str], None], interval: float = INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic, wake: Callable[[float], None] | None = None):
        self._send = send
        self._wake = wake
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self._pending: str | None = None
        self.sent = 0

    def offer(self, line: str) -> None:
        text = redact(line)
        if text:
            self._pending = text
            self.flush()

    def flush(self) -> None:
        """Sends the newest waiting line if the interval allows it now."""
        if self._pending is None:
            return
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            if self._wake is not None:
                self._wake(self._interval - (now - self._last))
            return
        text, self._pending = self._pending, None
        self._last = now
        self.sent += 1
        self._send(text)

    def finish(self) -> None:
        """The call ends: the newest waiting line goes out now, whatever the interval says."""
        if self._pending is not None:
            self._last = None
            self.flush()
