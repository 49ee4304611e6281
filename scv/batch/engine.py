"""The seam between the batch runner and what runs its tasks: an engine takes submitted tasks
and reports what happens to each as events. The local engine runs them in this process's own
workers; the Ray engine (scv/batch/ray_engine.py) runs them on the nodes of a Ray cluster. A
fake beside the tests (tests/batch_fakes.py) drives the runner without either.

Every event names its task id, its attempt and the node it ran on; exactly one `Finished` ends
each submission, whatever happened to it (completed, failed, cancelled, lost)."""

import socket
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

from scv.batch.tasks import Task

# Statuses a result line can carry besides the agent's own (completed, failed, declined, timeout).
CANCELLED = "cancelled"
LOST = "lost"           # the node or its worker went away mid-task; --retries may run it again


@dataclass(frozen=True)
class Node:
    host: str
    id: str | None = None       # the engine's own id for the node (Ray's node id); None locally
    name: str = ""              # how progress lines name it: host, or host/short id when hosts repeat

    def label(self) -> str:
        return self.name or self.host

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "id": self.id}


def this_machine() -> Node:
    host = socket.gethostname()
    return Node(host=host, id=None, name=host)


@dataclass(frozen=True)
class Submission:
    task: Task
    attempt: int = 1            # 1 for the first run; a lost task resubmitted is attempt 2, ...

    @property
    def key(self) -> tuple[str, int]:
        return (self.task.id, self.attempt)


@dataclass(frozen=True)
class Started:
    task_id: str
    attempt: int
    node: Node


@dataclass(frozen=True)
class Progress:
    task_id: str
    attempt: int
    node: Node | None
    text: str


@dataclass(frozen=True)
class Finished:
    task_id: str
    attempt: int
    node: Node | None
    value: dict[str, Any] = field(default_factory=dict)     # the result object; value["status"] is set

    @property
    def status(self) -> str:
        return str(self.value.get("status"))


@dataclass(frozen=True)
class Note:
    """A line a node's runner asks the driver to print (tracing that could not start there): the
    driver prints each one once, whatever its display."""
    node: Node | None
    text: str


Event = Started | Progress | Finished | Note


class Engine(Protocol):
    # How long the runner waits for cancelled tasks to report before force-cancelling them.
    cancel_wait: float

    def capacity(self) -> dict[str, int]:
        """Agent name -> slots (tasks of that agent that can run at once) over all nodes."""

    def offers(self) -> str:
        """What the nodes offer, in words, for an error about an agent none of them has."""

    def submit(self, submission: Submission) -> None:
        """Starts (or queues) one attempt of a task; its events follow from events()."""

    def events(self, timeout: float) -> Iterable[Event]:
        """The events that arrived, waiting up to `timeout` seconds for the first."""

    def cancel(self, key: tuple[str, int], force: bool = False) -> None:
        """Asks a submission to stop (its Finished says cancelled); force kills what is left of it."""

    def wake(self) -> None:
        """Ends a wait in events() now (a stop was asked for); safe from a signal handler."""

    def close(self) -> None:
        """Releases the engine; no submission may still be running."""
