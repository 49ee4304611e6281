"""A cancellation token for agent runs that also fires a few seconds after the CLI printed its
final event, so a CLI that never exits after its result is stopped instead of holding the call
until its deadline. The same timer wakes the run to forward a progress line the throttle held
back, so a line is not left waiting while the CLI is quiet. The delays share one SIGALRM
interval timer (the worker is single-threaded), set to the earliest of them."""

import os
import signal
import time
from typing import Callable

from workers.running.cancel_token import CancelToken

RESULT_GRACE_SECONDS = 3.0


class ResultGraceToken:
    def __init__(self, inner: CancelToken, grace: float = RESULT_GRACE_SECONDS):
        self.inner = inner
        self.grace = grace
        self.expired = False
        self.limited = False        # a limit (docs/limits.md) was reached: stop the CLI now
        self._grace_at: float | None = None
        self._wake_at: float | None = None
        self._on_wake: Callable[[], None] | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous = signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_alarm(self, signum, frame) -> None:
        try:
            os.write(self._wake_w, b"a")
        except OSError:
            pass

    def _schedule(self) -> None:
        due = [at for at in (self._grace_at, self._wake_at) if at is not None]
        if not due:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        signal.setitimer(signal.ITIMER_REAL, max(min(due) - time.monotonic(), 0.001))

    def arm(self) -> None:
        """The final event arrived: start the grace period (once)."""
        if self._grace_at is None and not self.expired:
            self._grace_at = time.monotonic() + self.grace
            self._schedule()

    def disarm(self) -> None:
        """More output followed (pi retries after `agent_end`): wait for the next final event."""
        if self._grace_at is not None and not self.expired:
            self._grace_at = None
            self._schedule()

    def wake_in(self, seconds: float, on_wake: Callable[[], None]) -> None:
        """Calls `on_wake` (from `check`, never from the signal handler) after `seconds`."""
        at = time.monotonic() + seconds
        self._on_wake = on_wake
        if self._wake_at is not None and self._wake_at <= at:
            return                  # already due sooner (the throttle asks again on every chunk)
        self._wake_at = at
        self._schedule()

    def stop_for_limit(self) -> None:
        """From the stream's reader: the call's allowance is spent; the run stops the group (TERM)."""
        if not self.limited:
            self.limited = True
            self._on_alarm(signal.SIGALRM, None)     # wakes the run's loop through the same pipe

    @property
    def cancelled(self) -> bool:
        return self.inner.cancelled

    def fds(self) -> list[int]:
        return [self._wake_r, *self.inner.fds()]

    def check(self) -> bool:
        try:
            os.read(self._wake_r, 64)
        except BlockingIOError:
            pass
        now = time.monotonic()
        if self._grace_at is not None and now >= self._grace_at:
            self._grace_at = None
            self.expired = True
        if self._wake_at is not None and now >= self._wake_at:
            on_wake, self._wake_at, self._on_wake = self._on_wake, None, None
            if on_wake is not None:
                on_wake()
        self._schedule()
        return self.inner.check() or self.expired or self.limited

    def close(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
