"""The local engine: each task is an `agent` call in a worker of this process's supervisor, as a
background job runs, at most `slots` at once. `AgentCalls` is the one adapter between the batch
and SCV's call path (supervisor, registry, ToolRunner); nothing else in scv/batch touches it.
`scv batch --run-one` (scv/batch/run_one.py) runs its single task through this engine too, so
a task on a Ray node gets the same result object as a local one."""

import queue
import threading
import time
from pathlib import Path
from typing import Any, Iterable

import msgspec

from scv.batch.engine import CANCELLED, Event, Finished, Node, Progress, Started, Submission, this_machine
from scv.batch.results import COMPLETED
from scv.core.cancellation import Cancellation
from scv.core.errors import ConfigError, ScvError, UsageError
from scv.core.stopping import SETTLE_SECONDS
from scv.telemetry.spans import NO_SPAN, Span


def _approved(tool: str, risk, summary: str) -> bool:
    # The person who ran `scv batch FILE` asked for exactly these calls.
    return True


class AgentCalls:
    """The batch's `agent` calls: checks a task's arguments as the tool would, and runs them, one
    ToolRunner per slot (a runner's calls run one at a time). Open it from the main thread before
    any other thread starts: the supervisor forks its fork point."""

    def __init__(self, workspace: str | None, slots: int):
        from scv.agents.session import open_agent_session
        from scv.config.load import scv_home
        from scv.delegations.startup import start_tracking
        from scv.session.calls import ToolRunner
        from scv.session.context import load_context
        from scv.supervision.supervisor import Supervisor
        from scv.tools.base import ToolContext
        from scv.tools.registry import build_registry, executor_modules
        from scv.tools.services import Services

        ctx = load_context(workspace)
        if ctx.config.tools.approval_policy == "never":
            raise ConfigError("tools.approval_policy is \"never\", which denies agent calls, so scv batch cannot run "
                              "them; set it to \"on-risk\"")
        if ctx.config.agent.max_conversations < slots:
            # Each running task holds a conversation: the batch keeps as many as it runs at once.
            agent = msgspec.structs.replace(ctx.config.agent, max_conversations=slots)
            ctx = ToolContext(workspace=ctx.workspace, config=msgspec.structs.replace(ctx.config, agent=agent),
                              delegation_depth=ctx.delegation_depth)
        self.ctx = ctx
        self.supervisor = Supervisor(preload=executor_modules())     # before any thread
        self.agents = None
        try:
            start_tracking(self.supervisor)     # child subreaper, and the orphan reconcile
            self.agents = open_agent_session(ctx.config, scv_home())
            self.registry = build_registry(ctx, Services(agents=self.agents))
            if "agent" not in self.registry.names():
                raise UsageError("no agent is offered here (no agent CLI was found, or agent.max_delegation_depth "
                                 "is reached), so there is nothing to run the batch on")
        except BaseException:
            if self.agents is not None:
                self.agents.close()
            self.supervisor.close()
            raise
        self._make = lambda: ToolRunner(self.supervisor, self.registry, ctx, _approved)
        self._checker = self._make()
        self.trace: Span = NO_SPAN      # the batch's run span (scv/telemetry/): each task is a child

    @property
    def config(self):
        return self.ctx.config

    def offered(self) -> list[str]:
        from scv.agents.offered import discover
        return list(discover())

    def prepare(self, args: dict[str, Any], workspace: str | None = None) -> Any:
        """Raises ScvError (with the sentence for the user) when the call would be refused. A
        `workspace` (a task's worktree) stands in for the batch's own."""
        checker = self._checker if workspace is None else self.runner(workspace)
        return checker.prepare("agent", args)

    def runner(self, workspace: str | None = None) -> Any:
        """A ToolRunner; in `workspace` (a task's worktree or folder) instead of the batch's own."""
        if workspace is None:
            return self._make()
        from scv.session.calls import ToolRunner
        ctx = msgspec.structs.replace(self.ctx, workspace=Path(workspace))
        return ToolRunner(self.supervisor, self.registry, ctx, _approved)

    def run(self, runner: Any, prepared: Any, cancel: Cancellation, on_progress,
            task_id: str = "") -> tuple[bool, dict[str, Any]]:
        span = self.trace.child("scv batch task", {"scv.batch.task": task_id})
        try:
            result = runner.run(prepared, cancel=cancel, on_progress=on_progress, span=span)
        except BaseException as err:
            span.end(type(err).__name__)
            raise
        if span.recording:
            span.set({"scv.batch.status": result.value.get("status")})
        span.end(None if result.ok else "failed")
        return result.ok, dict(result.value)

    def close(self) -> None:
        """The batch's conversations end with it: their markers go, so gc may collect the transcripts."""
        try:
            self.agents.close()
        finally:
            self.supervisor.close()


def finish_value(ok: bool, value: dict[str, Any], cancelled: bool) -> dict[str, Any]:
    """The result object of one task, as a result line carries it (without id, node, attempt)."""
    status = str(value.get("status") or (COMPLETED if ok else "failed"))
    if cancelled and status != COMPLETED:
        status = CANCELLED
    value["status"] = status
    # Conversation handles end with the process that ran the task: a result line naming one would mislead.
    value.pop("session", None)
    value.pop("turn", None)
    return value


class LocalEngine:
    cancel_wait = SETTLE_SECONDS

    def __init__(self, calls: AgentCalls, slots: int, node: Node | None = None, batch: str = "stdout"):
        from scv.batch.task_flow import TaskFlow
        from scv.config.load import scv_home
        self.calls = calls
        self.flow = TaskFlow(calls, batch, scv_home())
        self.slots = max(1, slots)
        self.node = node or this_machine()
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._inbox: queue.Queue[tuple[Submission, Cancellation] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._running: dict[tuple[str, int], Cancellation] = {}
        self._lanes: list[threading.Thread] = []

    def capacity(self) -> dict[str, int]:
        return {name: self.slots for name in self.calls.offered()}

    def offers(self) -> str:
        names = self.calls.offered()
        return f"this machine offers {', '.join(names)}" if names else "this machine offers no agent"

    def submit(self, submission: Submission) -> None:
        if not self._lanes:
            # One lane per slot, each with its own runner: its calls never wait for another lane's.
            for index in range(self.slots):
                lane = threading.Thread(target=self._lane, name=f"scv-batch-{index}", daemon=True)
                self._lanes.append(lane)
                lane.start()
        cancel = Cancellation()
        with self._lock:
            self._running[submission.key] = cancel
        self._inbox.put((submission, cancel))

    def _lane(self) -> None:
        runner = self.calls.runner()
        while True:
            item = self._inbox.get()
            if item is None:
                return
            self._run(runner, *item)

    def _run(self, runner: Any, submission: Submission, cancel: Cancellation) -> None:
        task_id, attempt = submission.key
        if cancel.cancelled:        # cancelled before a lane took it: it never started
            self._done(submission, cancel, finish_value(False, {"status": CANCELLED}, True), None)
            return
        self._events.put(Started(task_id, attempt, self.node))
        try:
            ok, value = self.flow.run(runner, submission.task, cancel,
                                      lambda line: self._events.put(Progress(task_id, attempt, self.node, line)))
        except ScvError as exc:     # a refusal at run time (all conversations busy, ...) fails the task
            ok, value = False, {"status": "failed", "error": str(exc)}
        except Exception as exc:
            ok, value = False, {"status": "failed", "error": f"the task could not run: {exc}"}
        self._done(submission, cancel, finish_value(ok, value, cancel.cancelled), self.node)

    def _done(self, submission: Submission, cancel: Cancellation, value: dict[str, Any], node: Node | None) -> None:
        with self._lock:
            # RUNNING -> FINISHED; under the lock, so no cancel() reaches a closed pipe
            self._running.pop(submission.key, None)
            cancel.close()
        self._events.put(Finished(submission.task.id, submission.attempt, node, value))

    def events(self, timeout: float) -> Iterable[Event]:
        try:
            first = self._events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return []
        found = [first]
        while True:
            try:
                found.append(self._events.get_nowait())
            except queue.Empty:
                return [event for event in found if event is not None]

    def wake(self) -> None:
        self._events.put(None)      # not an event: it only ends the runner's wait

    def cancel(self, key: tuple[str, int], force: bool = False) -> None:
        # The supervisor's own escalation (TERM, grace, KILL, then the worker) is the force here.
        with self._lock:
            cancel = self._running.get(key)
            if cancel is not None:
                cancel.cancel()

    def close(self) -> None:
        for _ in self._lanes:
            self._inbox.put(None)
        deadline = time.monotonic() + self.cancel_wait
        for lane in self._lanes:
            lane.join(max(0.0, deadline - time.monotonic()))
