"""Runs a batch on an engine: keeps up to `parallel` tasks in flight, writes one result line per
task as each finishes, shows progress, and decides the exit status. The same for every engine.

- A task whose agent no node offers fails at once (an engine would keep it waiting for ever);
  one that waits longer than `schedule_timeout` for a slot is cancelled and fails.
- A task `lost` with its node runs again only while `retries` allow; a cancelled one never does.
- A task whose agent hit a usage limit goes back to the queue while `quota` (scv/batch/quota.py)
  pauses that agent; the queue starts the first task whose agent is not paused.
- `stop()` (Ctrl-C, SIGTERM; safe from a signal handler) cancels what runs and starts nothing
  more; after the engine's cancel wait what is left is force-cancelled, and a task that still
  does not report is written as cancelled, so the run always ends."""

import collections
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from scv.batch.engine import CANCELLED, LOST, Engine, Finished, Node, Note, Progress, Started, Submission
from scv.batch.progress import Display, Tally
from scv.batch.quota import QuotaGate
from scv.batch.results import COMPLETED, ResultSink
from scv.batch.tasks import Task
from scv.core.errors import EXIT_FAILED, EXIT_LIMIT, EXIT_OK, interrupted_exit

if TYPE_CHECKING:
    from scv.batch.limits import BatchLimits


POLL_SECONDS = 0.2
FORCE_WAIT_SECONDS = 5.0


@dataclass
class _Flight:
    submission: Submission
    submitted_at: float
    started_at: float | None = None
    node: Node | None = None
    timed_out: bool = False


def result_line(task: Task, value: dict[str, Any], node: Node | None, attempt: int, elapsed: float) -> dict[str, Any]:
    return {"id": task.id, "line": task.line, **value, "node": node.as_dict() if node is not None else None,
            "attempt": attempt, "elapsed_seconds": round(elapsed, 2)}


class BatchRunner:
    def __init__(self, engine: Engine, tasks: list[Task], sink: ResultSink, display: Display, *, parallel: int,
                 prefer: list[str] | tuple[str, ...] = (), schedule_timeout: float | None = None, retries: int = 0,
                 skipped: int = 0, clock: Callable[[], float] = time.monotonic,
                 force_wait: float = FORCE_WAIT_SECONDS, quota: QuotaGate | None = None,
                 limits: "BatchLimits | None" = None):
        self.engine = engine
        self.tasks = list(tasks)
        self.sink = sink
        self.display = display
        self._warned: set[str] = set()      # the Note lines printed (each once)
        self.parallel = max(1, parallel)
        self.prefer = list(prefer)
        self.schedule_timeout = schedule_timeout
        self.retries = max(0, retries)
        self.clock = clock
        self.force_wait = force_wait
        self.quota = quota
        self.tally = Tally(total=len(tasks) + skipped, skipped=skipped)
        self.all_completed = True
        self.stopped_by: int | None = None
        self._flights: dict[tuple[str, int], _Flight] = {}
        self._stopping_since: float | None = None
        self._forced_at: float | None = None
        self.limits = limits            # the whole batch's --max-tokens/--max-cost-usd (scv/batch/limits.py)

    # --- control ------------------------------------------------------------------------------

    def stop(self, signum: int = signal.SIGINT) -> None:
        """Records the request and wakes the loop, which acts on it (safe from a signal handler)."""
        if self.stopped_by is None:
            self.stopped_by = signum
            self.engine.wake()

    def exit_code(self) -> int:
        if self.stopped_by is not None:
            return interrupted_exit(self.stopped_by)
        if self.limits is not None and self.limits.hit is not None:
            return EXIT_LIMIT
        return EXIT_OK if self.all_completed else EXIT_FAILED

    # --- the loop -----------------------------------------------------------------------------

    def run(self) -> int:
        pending = collections.deque(Submission(task) for task in self._feasible())
        while (pending and self.stopped_by is None) or self._flights:
            now = self.clock()
            if self.stopped_by is not None:
                if self._stop_step(now):
                    break
            else:
                while pending and len(self._flights) < self.parallel:
                    if self.limits is not None and self.limits.hit is not None:
                        submission = pending.popleft()      # written as `limit` below, paused or not
                    else:
                        submission = self._next_ready(pending)
                        if submission is None:
                            break       # every queued task's agent is paused
                    if self._held_by_limit(submission):
                        continue
                    self._flights[submission.key] = _Flight(submission, self.clock())
                    self.engine.submit(submission)
                self._check_schedule(now)
            for event in self.engine.events(POLL_SECONDS):
                again = self._handle(event)
                if again is not None:
                    pending.appendleft(again)
            self.display.tick(self.tally)
        if self.stopped_by is not None:
            self.all_completed = False
        self.display.final(self.tally.line(over=True) + (" (interrupted)" if self.stopped_by is not None else ""))
        return self.exit_code()

    def _next_ready(self, pending: collections.deque) -> Submission | None:
        if self.quota is None:
            return pending.popleft()
        for index, submission in enumerate(pending):
            task = self.quota.ready(submission.task)
            if task is not None:
                del pending[index]
                return submission if task is submission.task else Submission(task, submission.attempt)
        return None
    def _held_by_limit(self, submission: Submission) -> bool:
        """Once the batch's limit is reached no task starts: it is written as `limit` instead."""
        if self.limits is None:
            return False
        if self.limits.hit is None:
            self.limits.narrow(submission.task.spec)
            return False
        self._write(submission.task, self.limits.not_started(), None, submission.attempt, 0.0)
        return True

    def _count_usage(self, flight: _Flight, value: dict[str, Any]) -> None:
        """Adds a finished task's usage to the batch's; the first to reach its limit stops the others."""
        if self.limits is None:
            return
        was = self.limits.hit
        if was is not None and value.get("status") == CANCELLED:
            self.limits.stopped(value)
        if self.limits.add(value, flight.submission.task.spec.model) is not None and was is None:
            # RUNNING -> LIMITED: the running tasks stop; the pending ones will be written as `limit`
            self.display.note(f"the batch's {self.limits.hit.sentence()}; stopping the running tasks")
            for key in list(self._flights):
                self.engine.cancel(key)

    def _feasible(self) -> list[Task]:
        """Picks each task's agent; the ones no node offers fail now, before anything starts."""
        capacity = self.engine.capacity()
        if self.quota is not None:
            self.quota.offered = frozenset(name for name, slots in capacity.items() if slots > 0)
        feasible = []
        for task in self.tasks:
            agent = task.spec.agent or next((name for name in self.prefer if capacity.get(name, 0) > 0), None)
            task.agent = agent
            if agent is None:
                error = (f"the task names no agent and [agent] prefer names none that is offered "
                         f"({self.engine.offers()}); name the agent")
            elif capacity.get(agent, 0) < 1:
                error = f"no node offers agent {agent}: {self.engine.offers()}"
            else:
                feasible.append(task)
                continue
            self._write(task, {"agent": agent, "status": "failed", "error": error}, None, 1, 0.0)
        return feasible

    def _check_schedule(self, now: float) -> None:
        if self.schedule_timeout is None:
            return
        for key, flight in self._flights.items():
            if flight.started_at is None and not flight.timed_out and now - flight.submitted_at > self.schedule_timeout:
                # QUEUED -> CANCELLING: no slot came free in time
                flight.timed_out = True
                self.engine.cancel(key)

    def _stop_step(self, now: float) -> bool:
        """True when the run must end without waiting any longer."""
        if self._stopping_since is None:
            # RUNNING -> STOPPING: every task in flight is asked to stop; nothing new starts
            self._stopping_since = now
            for key in list(self._flights):
                self.engine.cancel(key)
        elif self._forced_at is None and now - self._stopping_since >= self.engine.cancel_wait:
            # STOPPING -> FORCED: what did not end within the cancel wait is killed
            self._forced_at = now
            for key in list(self._flights):
                self.engine.cancel(key, force=True)
        elif self._forced_at is not None and now - self._forced_at >= self.force_wait:
            for flight in list(self._flights.values()):
                self._finish(flight, {"status": CANCELLED, "error": "the task did not report after it was cancelled"},
                             flight.node)
            self._flights.clear()
            return True
        return False

    def _handle(self, event) -> Submission | None:
        if isinstance(event, Note):
            line = f"{event.text} (node {event.node.label()})" if event.node is not None else event.text
            if line not in self._warned:
                self._warned.add(line)
                self.display.warn(line)
            return None
        flight = self._flights.get((event.task_id, event.attempt))
        if flight is None:
            return None
        if isinstance(event, Started):
            # QUEUED -> RUNNING
            flight.started_at = self.clock()
            flight.node = event.node
            self.tally.running += 1
            self.display.started(event.task_id, event.attempt, event.node)
        elif isinstance(event, Progress):
            self.display.progress(event.task_id, event.node or flight.node, event.text)
        elif isinstance(event, Finished):
            del self._flights[(event.task_id, event.attempt)]
            if flight.started_at is not None:
                self.tally.running -= 1
            return self._finished(flight, event)
        return None

    def _finished(self, flight: _Flight, event: Finished) -> Submission | None:
        task, attempt = flight.submission.task, flight.submission.attempt
        value = dict(event.value)
        status = str(value.get("status") or "failed")
        node = event.node or flight.node
        if status != COMPLETED and flight.timed_out:
            status = "failed"
            value["error"] = (f"waited more than {self.schedule_timeout:g} s for a free slot of agent {task.agent} "
                              "(--schedule-timeout)")
        elif status != COMPLETED and self.stopped_by is not None:
            status = CANCELLED
        elif status == LOST and attempt <= self.retries:
            # LOST -> QUEUED: --retries allows another attempt, on whichever node has a slot
            self.display.note(f"{task.id} lost: {value.get('error', 'its node went away')}; running it again "
                              f"(attempt {attempt + 1} of {self.retries + 1})")
            return Submission(task, attempt + 1)
        elif self.quota is not None and self.quota.after(task, value, self.display.note):
            return Submission(task, attempt)        # FAILED -> QUEUED: its agent waits out its limit
        else:
            status = str(value.get("status") or status)     # `quota` once it waited as long as it may
        value["status"] = status
        self._count_usage(flight, value)
        self._finish(flight, value, node)
        return None

    def _finish(self, flight: _Flight, value: dict[str, Any], node: Node | None) -> None:
        value.setdefault("agent", flight.submission.task.agent)
        since = flight.started_at if flight.started_at is not None else flight.submitted_at
        self._write(flight.submission.task, value, node, flight.submission.attempt, self.clock() - since)

    def _write(self, task: Task, value: dict[str, Any], node: Node | None, attempt: int, elapsed: float) -> None:
        status = str(value.get("status"))
        value.setdefault("usage", None)
        self.sink.write(result_line(task, value, node, attempt, elapsed))
        if self.limits is not None:
            self.tally.spent = self.limits.line()
        if status == COMPLETED:
            self.tally.done += 1
        elif status == LOST:
            self.tally.lost += 1
            self.all_completed = False
        else:
            self.tally.failed += 1
            self.all_completed = False
        self.display.finished(task.id, status, node, self.tally)
