"""The seam where delegation records hook in: a delegated agent process has started, and ended.

Each run is handed its observer (the record keeper of workers/delegation_records.py, which writes
and removes `$SCV_HOME/state/delegations/<handle>.json`; a test may pass its own). An observer must
not stop the run: what it raises is reported to stderr and the run goes on.
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


def _safely(call, *args) -> None:
    try:
        call(*args)
    except Exception:
        traceback.print_exc(file=sys.stderr)


def started(observer: RunObserver, run: DelegatedRun, pid: int) -> None:
    _safely(observer.started, run, pid)


def ended(observer: RunObserver, run: DelegatedRun, pid: int, exit_code: int | None, signal: str | None) -> None:
    _safely(observer.ended, run, pid, exit_code, signal)
