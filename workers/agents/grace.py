"""A cancellation token for agent runs that also fires a few seconds after the CLI printed its
final event, so a CLI that never exits after its result is stopped instead of holding the call
until its deadline. The delay is a SIGALRM interval timer (the worker is single-threaded)."""

import os
import signal

from workers.cancel_token import CancelToken

RESULT_GRACE_SECONDS = 3.0


class ResultGraceToken:
    def __init__(self, inner: CancelToken, grace: float = RESULT_GRACE_SECONDS):
        self.inner = inner
        self.grace = grace
        self.expired = False
        self._armed = False
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous = signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_alarm(self, signum, frame) -> None:
        self.expired = True
        try:
            os.write(self._wake_w, b"a")
        except OSError:
            pass

    def arm(self) -> None:
        """The final event arrived: start the grace period (once)."""
        if not self._armed:
            self._armed = True
            signal.setitimer(signal.ITIMER_REAL, self.grace)

    def disarm(self) -> None:
        """More output followed (pi retries after `agent_end`): wait for the next final event."""
        if self._armed and not self.expired:
            self._armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)

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
        return self.inner.check() or self.expired

    def close(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
