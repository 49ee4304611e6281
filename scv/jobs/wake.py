"""Ending a waiting call early: the worker of `agent_wait` or `agent_cancel` waits on its
cancellation token, and the session wakes it (a `Cancel` frame) when the job settles, as the
turn's own cancellation would. `Either` is readable when any of its sources fired, through an
epoll descriptor the supervisor's call loop can wait on like any cancellation."""

import contextlib
import select
from typing import Iterator

from scv.core.cancellation import Cancellation


class Either:
    def __init__(self, *sources: Cancellation | None):
        self.sources = [s for s in sources if s is not None]
        self._epoll = select.epoll()
        for source in self.sources:
            self._epoll.register(source.fileno(), select.EPOLLIN)

    @property
    def cancelled(self) -> bool:
        return any(source.cancelled for source in self.sources)

    def fileno(self) -> int:
        return self._epoll.fileno()

    def close(self) -> None:
        self._epoll.close()


@contextlib.contextmanager
def either(*sources: Cancellation | None) -> Iterator[Either]:
    merged = Either(*sources)
    try:
        yield merged
    finally:
        merged.close()


@contextlib.contextmanager
def until_settled(jobs, job, cancel: Cancellation | None) -> Iterator[Either]:
    """A cancellation source that fires when the call is cancelled or when `job` settles: what a
    worker waiting on a job listens to."""
    waiter = jobs.wake_on_settle(job)
    try:
        with either(cancel, waiter) as merged:
            yield merged
    finally:
        jobs.forget_waiter(job, waiter)
