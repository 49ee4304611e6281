"""The seam where delegation records hook in: a delegated agent process has started, and ended.

`scv/delegations/` (issue 6) registers a `RunObserver` here to write and remove
`$SCV_HOME/state/delegations/<handle>.json`; until one is registered the calls do nothing.
An observer must not raise: the run goes on whatever it does, so errors are reported to stderr.
"""

import sys
import traceback
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class DelegatedRun:
    handle: str              # the delegation handle, such as codex-3f9a2c
    agent: str
    parent: str              # the SCV_PARENT chain the process carries
    depth: int
    cwd: str
    conversation: str | None
    turn: int | None


class RunObserver(Protocol):
    def started(self, run: DelegatedRun, pid: int) -> None: ...

    def ended(self, run: DelegatedRun, pid: int, exit_code: int | None, signal: str | None) -> None: ...


OBSERVERS: list[RunObserver] = []


def _each(method: str, *args) -> None:
    for observer in list(OBSERVERS):
        try:
            getattr(observer, method)(*args)
        except Exception:
            traceback.print_exc(file=sys.stderr)


def started(run: DelegatedRun, pid: int) -> None:
    _each("started", run, pid)


def ended(run: DelegatedRun, pid: int, exit_code: int | None, signal: str | None) -> None:
    _each("ended", run, pid, exit_code, signal)
