"""One background job: an `agent` call running in its own worker on a thread of the session.

```
RUNNING ──the call ends──▶ COMPLETED | FAILED | DECLINED | TIMEOUT | LIMIT
   └──agent_cancel, or the session's end──▶ CANCELLED
```
`seen` becomes true once the model has read the final result (through agent_wait,
agent_status or a report turn).
"""

import enum
import threading
import time
from typing import Any

import msgspec

from scv.core.cancellation import Cancellation


class JobState(str, enum.Enum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    DECLINED = "declined"
    TIMEOUT = "timeout"
    LIMIT = "limit"                 # stopped by its allowance (docs/limits.md); its conversation kept
    CANCELLED = "cancelled"


def final_state(status: str | None, ok: bool) -> JobState:
    """The state a finished call's status names; an unknown status is a failure."""
    try:
        state = JobState(status or ("completed" if ok else "failed"))
    except ValueError:
        return JobState.FAILED
    return JobState.FAILED if state is JobState.RUNNING else state


class Job(msgspec.Struct):
    id: str                         # job-1, job-2, ... within a session
    agent: str
    conversation: str | None        # the session handle the call continues, when it names one
    started: float = msgspec.field(default_factory=time.monotonic)
    finished: float | None = None
    state: JobState = JobState.RUNNING
    result: dict[str, Any] | None = None
    progress: str | None = None     # the latest progress line while it runs
    seen: bool = False
    reported: bool = False
    cancel_requested: bool = False
    # The run's limit (LimitHit.wire()) that stopped it: the run's budget ran out while it ran.
    stopped_by_limit: dict[str, Any] | None = None
    cancel: Cancellation = msgspec.field(default_factory=Cancellation)
    done: threading.Event = msgspec.field(default_factory=threading.Event)
    # Cancellations of calls waiting for this job (agent_wait, agent_cancel): fired when it settles.
    waiters: list[Cancellation] = msgspec.field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.state is JobState.RUNNING

    @property
    def status(self) -> str:
        return self.state.value

    def settle(self, state: JobState) -> None:
        """RUNNING -> a final state; a finished job never moves again."""
        if self.state is not JobState.RUNNING or state is JobState.RUNNING:
            raise ValueError(f"job {self.id} cannot move from {self.state.value} to {state.value}")
        self.state = state
        self.finished = time.monotonic()

    def elapsed(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return round(end - self.started, 1)

    def describe(self) -> dict[str, Any]:
        """What the model reads: running jobs with their latest progress, finished ones with the result."""
        out: dict[str, Any] = {"job": self.id, "agent": self.agent, "status": self.status,
                               "elapsed_seconds": self.elapsed()}
        if self.conversation:
            out["session"] = self.conversation
        if self.running:
            if self.progress:
                out["progress"] = self.progress
        else:
            out["result"] = self.result
        return out
