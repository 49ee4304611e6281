"""`scv batch --engine ray --detach`: the batch is owned by a coordinator actor on the head, a
detached actor in namespace `scv` named from the input file's digest and the output path. The
actor runs the batch (the same runner and Ray engine as an attached run) and keeps its events;
the local command only streams them and appends result lines, so it can be stopped and run again
to re-attach: no task runs twice, and finished results are collected. `--cancel` cancels the
batch, collects what it wrote, and lets the actor go.

The actor lives only as long as the head: if the head dies, the batch and the results not yet
collected go with it; a later run with the same --output re-runs every task not completed."""

import collections
import hashlib
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec
import ray

from scv.batch import progress
from scv.batch.engine import Node
from scv.batch.progress import Display, Tally
from scv.batch.results import COMPLETED, ResultSink, completed_lines
from scv.batch.run_one import OneTask
from scv.batch.runner import BatchRunner
from scv.batch.tasks import Task
from scv.cluster.connect import connect_driver
from scv.cluster.settings import HEAD_RESOURCE, NAMESPACE, ClusterError
from scv.core.errors import EXIT_FAILED, EXIT_OK, interrupted_exit
from scv.core.signals import on_stop_signals

EVENTS_KEPT = 2000
WAIT_SECONDS = 1.0


def batch_name(input_path: Path, output: Path) -> str:
    digest = hashlib.sha256(input_path.read_bytes()).hexdigest()[:16]
    where = hashlib.sha256(str(output.absolute()).encode()).hexdigest()[:8]
    return f"scv-batch-{digest}-{where}"


class _Log:
    """What the coordinator keeps for its clients: every result line, and the latest events."""

    def __init__(self):
        self.lines: list[dict[str, Any]] = []
        self.events: collections.deque = collections.deque(maxlen=EVENTS_KEPT)
        self.sequence = 0
        self.done = False
        self.code: int | None = None
        self.final = ""
        self.changed = threading.Condition()

    def event(self, kind: str, **fields) -> None:
        with self.changed:
            self.sequence += 1
            self.events.append((self.sequence, {"kind": kind, **fields}))
            self.changed.notify_all()

    def write(self, line: dict[str, Any]) -> None:      # the runner's result sink
        with self.changed:
            self.lines.append(line)
            self.changed.notify_all()


class _LogDisplay(Display):
    def __init__(self, log: _Log):
        super().__init__(sys.stderr)
        self.log = log

    @staticmethod
    def _node(node: Node | None):
        return None if node is None else [node.host, node.id, node.name]

    def note(self, text: str) -> None:
        self.log.event("note", text=text)

    def started(self, task_id: str, attempt: int, node: Node) -> None:
        self.log.event("started", id=task_id, attempt=attempt, node=self._node(node))

    def progress(self, task_id: str, node: Node | None, text: str) -> None:
        self.log.event("progress", id=task_id, node=self._node(node), text=text)

    def final(self, line: str) -> None:
        self.log.final = line


@ray.remote(num_cpus=0, max_restarts=0, max_concurrency=8)
class Coordinator:
    def __init__(self):
        self.log = _Log()
        self.runner: BatchRunner | None = None

    def start(self, payload: bytes, parallel: int | None, schedule_timeout: float, retries: int,
              prefer: list[str], skipped: int) -> bool:
        if self.runner is not None:
            return False
        from scv.batch.ray_engine import RayEngine
        todo = [Task(one.line, one.task, None) for one in msgspec.json.decode(payload, type=list[OneTask])]
        engine = RayEngine()
        limit = parallel or max(1, sum(engine.capacity().values()))
        self.runner = BatchRunner(engine, todo, self.log, _LogDisplay(self.log), parallel=limit, prefer=prefer,
                                  schedule_timeout=schedule_timeout, retries=retries, skipped=skipped)
        threading.Thread(target=self._run, name="scv-detached-batch", daemon=True).start()
        return True

    def _run(self) -> None:
        code = self.runner.run()
        with self.log.changed:
            self.log.code, self.log.done = code, True
            self.log.changed.notify_all()

    def events(self, line_cursor: int, event_cursor: int, wait: float) -> dict[str, Any]:
        log = self.log
        with log.changed:
            if len(log.lines) == line_cursor and log.sequence == event_cursor and not log.done:
                log.changed.wait(wait)
            events = [e for seq, e in log.events if seq > event_cursor]
            return {"lines": log.lines[line_cursor:], "line_cursor": len(log.lines), "events": events,
                    "event_cursor": log.sequence, "done": log.done, "code": log.code, "final": log.final,
                    "total": self.runner.tally.total if self.runner else 0}

    def cancel(self) -> bool:
        if self.runner is None or self.log.done:
            return False
        self.runner.stop(signal.SIGTERM)
        return True


def _node(value) -> Node | None:
    return Node(host=value[0], id=value[1], name=value[2]) if value else None


def attach(file: Path, batch: list[Task], output: Path, address: str, token: Path, *, cancel: bool, quiet: bool,
           parallel: int | None, schedule_timeout: float, retries: int, prefer: list[str]) -> int:
    name = batch_name(file, output)
    kept = completed_lines(output)
    connect_driver(address, token)
    try:
        try:
            actor = ray.get_actor(name, namespace=NAMESPACE)
            found = True
        except ValueError:
            actor, found = None, False
        display = progress.choose(sys.stderr, quiet)
        if cancel:
            if not found:
                raise _NotRunning(f"no detached batch of {file} with output {output} runs on the cluster at "
                                  f"{address}; nothing to cancel")
            ray.get(actor.cancel.remote())
            display.note(f"cancelling the detached batch {name}")
        elif found:
            display.note(f"re-attached to the detached batch {name}; its results go to {output}")
        else:
            todo = [task for task in batch if task.id not in kept]
            payload = msgspec.json.encode([OneTask(task=t.spec, line=t.line) for t in todo])
            actor = Coordinator.options(name=name, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
                                        resources={HEAD_RESOURCE: 0.001}).remote()
            ray.get(actor.start.remote(payload, parallel, schedule_timeout, retries, list(prefer),
                                       len(batch) - len(todo)))
            display.note(f"detached batch {name} started on the head with {len(todo)} task(s); stop this command "
                         "at any time and run it again to re-attach")
        sink = ResultSink(output, sys.stdout.buffer)
        sink.open(kept)
        try:
            return _stream(actor, sink, set(kept), display, len(batch), cancel)
        finally:
            sink.close()
    finally:
        ray.shutdown()


class _NotRunning(ClusterError):
    pass


def _stream(actor, sink: ResultSink, kept: set[str], display: Display, total: int, cancelling: bool) -> int:
    """Appends the batch's result lines not in the output yet, until the batch is done (or this
    command is stopped: the batch goes on, on the head)."""
    stopped: list[int] = []
    with on_stop_signals(stopped.append):
        return _stream_until_done(actor, sink, kept, display, total, cancelling, stopped)


def _stream_until_done(actor, sink: ResultSink, kept: set[str], display: Display, total: int, cancelling: bool,
                       stopped: list[int]) -> int:
    tally = Tally(total=total, skipped=len(kept))
    written: set[str] = set()
    all_completed = True
    line_cursor = event_cursor = 0
    asked = None
    while not stopped:
        if asked is None:
            asked = actor.events.remote(line_cursor, event_cursor, WAIT_SECONDS)
        try:
            # Bounded, so a stop request is seen at once even while the coordinator is slow to answer.
            got = ray.get(asked, timeout=WAIT_SECONDS)
        except ray.exceptions.GetTimeoutError:
            continue
        except ray.exceptions.RayError as exc:
            raise ClusterError(f"the detached batch's coordinator is gone ({type(exc).__name__}); run the same "
                               "command again: tasks not completed run again") from None
        asked = None
        line_cursor, event_cursor = got["line_cursor"], got["event_cursor"]
        for event in got["events"]:
            if event.get("id") in kept:
                continue
            if event["kind"] == "note":
                display.note(event["text"])
            elif event["kind"] == "started" and event["id"] not in written:
                tally.running += 1
                display.started(event["id"], event["attempt"], _node(event["node"]))
            elif event["kind"] == "progress" and event["id"] not in written:
                display.progress(event["id"], _node(event["node"]), event["text"])
        for line in got["lines"]:
            task_id = line.get("id")
            if task_id in kept or task_id in written:
                continue
            written.add(task_id)
            sink.write(line)
            status = line.get("status")
            tally.running = max(0, tally.running - 1)
            if status == COMPLETED:
                tally.done += 1
            elif status == "lost":
                tally.lost += 1
            else:
                tally.failed += 1
            all_completed = all_completed and status == COMPLETED
            display.finished(task_id, str(status), _node_of(line), tally)
        display.tick(tally)
        if got["done"]:
            ray.kill(actor)         # every result line is in the output now: the coordinator goes
            display.final(tally.line(over=True) + (" (cancelled)" if cancelling else ""))
            if cancelling:
                return EXIT_OK
            return EXIT_OK if all_completed else EXIT_FAILED
    display.final(tally.line() + " (detached: the batch goes on on the head; run the same command again to "
                                 "re-attach, or add --cancel to cancel it)")
    return interrupted_exit(stopped[0])


def _node_of(line: dict[str, Any]) -> Node | None:
    node = line.get("node")
    if isinstance(node, dict):
        return Node(host=str(node.get("host")), id=node.get("id"), name=str(node.get("host")))
    return None
