"""Runs a batch: up to `parallel` tasks at once, each an `agent` call in its own worker (through a
ToolRunner of its own, as a background job runs), results written as each finishes, progress on
stderr. `stop()` (Ctrl-C, SIGTERM) cancels the running tasks, which stops their processes, and
starts no more; their result lines say `cancelled`."""

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from scv.batch.results import COMPLETED, ResultSink
from scv.batch.tasks import Task
from scv.cancellation import Cancellation

CANCELLED = "cancelled"


@dataclass
class Tally:
    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    started_at: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        elapsed = time.monotonic() - self.started_at
        finished = self.done + self.skipped
        return (f"scv batch: {finished}/{self.total} done, {self.running} running, {self.failed} failed, "
                f"{elapsed:.1f} s")


class BatchRunner:
    def __init__(self, make_runner: Callable[[], Any], tasks: list[Task], sink: ResultSink, parallel: int,
                 progress: Callable[[str], None], skipped: int = 0):
        self.make_runner = make_runner
        self.pending = list(tasks)
        self.sink = sink
        self.parallel = max(1, parallel)
        self.progress = progress
        self.tally = Tally(total=len(tasks) + skipped, skipped=skipped)
        self.stopped = False
        self._lock = threading.Lock()
        self._running: dict[str, Cancellation] = {}
        self._threads: list[threading.Thread] = []
        self.all_completed = True

    def _next(self) -> Task | None:
        with self._lock:
            if self.stopped or not self.pending:
                return None
            return self.pending.pop(0)

    def _lane(self) -> None:
        runner = self.make_runner()        # one runner per lane: its calls never wait for another lane's
        while True:
            task = self._next()
            if task is None:
                return
            self._run(runner, task)

    def _run(self, runner: Any, task: Task) -> None:
        cancel = Cancellation()
        with self._lock:
            if self.stopped:
                cancel.close()
                return
            # PENDING -> RUNNING
            self._running[task.id] = cancel
            self.tally.running += 1
        started = time.monotonic()
        try:
            result = runner.run(task.prepared, cancel=cancel)
            ok, value = result.ok, dict(result.value)
        except Exception as exc:       # a refusal at run time (all conversations busy, ...) fails the task
            ok, value = False, {"status": "failed", "error": str(exc)}
        status = str(value.get("status") or ("completed" if ok else "failed"))
        if cancel.cancelled and status != COMPLETED:
            status = CANCELLED
        value["status"] = status
        # Conversation handles end with this process: a result line that named one would mislead.
        value.pop("session", None)
        value.pop("turn", None)
        line = {"id": task.id, "line": task.line, **value, "elapsed_seconds": round(time.monotonic() - started, 2)}
        self.sink.write(line)
        with self._lock:
            # RUNNING -> FINISHED
            self._running.pop(task.id, None)
            self.tally.running -= 1
            if status == COMPLETED:
                self.tally.done += 1
            else:
                self.tally.failed += 1
                self.all_completed = False
            text = self.tally.line()
        cancel.close()
        self.progress(f"{text} ({task.id}: {status})")

    def run(self) -> None:
        lanes = min(self.parallel, len(self.pending))
        for index in range(lanes):
            thread = threading.Thread(target=self._lane, name=f"scv-batch-{index}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """True once every lane has finished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def stop(self) -> None:
        """Cancels the running tasks and starts no more (safe from a signal handler)."""
        self.stopped = True
        self.all_completed = False
        for cancel in list(self._running.values()):
            cancel.cancel()
