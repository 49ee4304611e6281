"""One background job: an `agent` call running in its own worker on a thread of the session.

States: RUNNING -> one of the agent's final statuses (completed, failed, declined, timeout)
or `cancelled` when `agent_cancel` or the session's end stopped it. `seen` becomes true once the
model has read the final result (through agent_wait, agent_status or a report turn).
"""

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from scv.cancellation import Cancellation

RUNNING = "running"
CANCELLED = "cancelled"


@dataclass
class Job:
    id: str                         # job-1, job-2, ... within a session
    agent: str
    conversation: str | None        # the session handle the call continues, when it names one
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    status: str = RUNNING
    result: dict[str, Any] | None = None
    progress: str | None = None     # the latest progress line while it runs
    seen: bool = False
    reported: bool = False
    cancel_requested: bool = False
    cancel: Cancellation = field(default_factory=Cancellation)
    done: threading.Event = field(default_factory=threading.Event)
    # Cancellations of calls waiting for this job (agent_wait, agent_cancel): fired when it settles.
    waiters: list[Cancellation] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.status == RUNNING

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
