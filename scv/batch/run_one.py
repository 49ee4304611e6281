"""`scv batch --run-one`: runs batch tasks on this machine for an engine that runs tasks
elsewhere (a Ray node). It reads tasks as JSON lines on stdin, one at a time, and for each
writes JSON lines on stdout: `{"type": "progress", "text": ...}` lines, then exactly one
`{"type": "result", "result": {...}}` with the result object a local task gets. It exits at the
end of its input (0; 2 when a line was not a task). Piping one task and closing stdin is the
whole contract; the Ray task keeps one runner per Ray worker and hands it the next task, so a
task costs no interpreter start.

- SIGTERM (or SIGINT) cancels the running task: SCV's own teardown stops the agent's whole tree,
  setsid escapees included, within the cancel budget; its result says `cancelled`, and the
  runner exits.
- It asks the kernel for SIGTERM when its parent dies (PR_SET_PDEATHSIG), so a killed engine
  worker still triggers the teardown. The signal follows the parent *thread*: start it from the
  main thread of the engine's task. `SCV_RUN_ONE_PARENT` names the parent's pid, to catch a
  parent that died before the request was made.
- Like every long-lived SCV command it reconciles orphans when it starts, and again before each
  task: what an earlier runner killed with SIGKILL left on this machine is stopped when the next
  task starts here.

The workspace is `-C`, else `$SCV_NODE_WORKSPACE` (set by `scv cluster join --workspace`), else
the current folder; a task's `cwd` must stay inside it."""

import ctypes
import os
import signal
import sys
from typing import Any

import msgspec

from scv.batch.engine import Finished, Progress, Submission
from scv.batch.tasks import Task, TaskLine
from scv.cluster import WORKSPACE_VARIABLE
from scv.core.cancellation import Cancellation
from scv.core.errors import EXIT_USAGE, ScvError
from scv.core.lines import TOO_LONG, LineReader
from scv.core.signals import on_stop_signals
from scv.core.traceparent import TraceContext
from scv.telemetry.spans import NO_SPAN, Run, Span
from scv.telemetry.start import start_run

PARENT_VARIABLE = "SCV_RUN_ONE_PARENT"
MAX_INPUT_BYTES = 1 << 20
PR_SET_PDEATHSIG = 1


class OneTask(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    task: TaskLine
    line: int = 0
    attempt: int = 1
    batch: str = "stdout"       # <batch> in an isolated task's branch name
    trace: TraceContext | None = None   # the driver's batch span: this task's span is its child


class ProgressLine(msgspec.Struct, tag="progress", tag_field="type"):
    text: str


class ResultLine(msgspec.Struct, tag="result", tag_field="type", omit_defaults=True):
    result: dict[str, Any]          # the result object a local task gets
    note: str | None = None         # a line for the driver to print (scv/batch/engine.py Note)


RunOneLine = ProgressLine | ResultLine

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(OneTask)
_line_decoder = msgspec.json.Decoder(RunOneLine)


def decode_line(raw: bytes) -> RunOneLine:
    """One line the runner wrote; raises msgspec.DecodeError (or ValidationError) for another."""
    return _line_decoder.decode(raw)


def encode_task(task: TaskLine, line: int, attempt: int, batch: str = "stdout",
                trace: TraceContext | None = None) -> bytes:
    return _encoder.encode(OneTask(task=task, line=line, attempt=attempt, batch=batch, trace=trace))


class _Out:
    """JSON lines on stdout; a reader that went away (its engine worker died) is not an error."""

    def __init__(self, fd: int):
        self.fd = fd
        self.broken = False

    def send(self, message: RunOneLine) -> None:
        if self.broken:
            return
        view = memoryview(_encoder.encode(message) + b"\n")
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError:
            self.broken = True


def die_with_parent() -> bool:
    """SIGTERM when the parent goes; False when it has gone already."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    expected = os.environ.get(PARENT_VARIABLE)
    return not (expected and expected.isdigit() and os.getppid() != int(expected))


def _decode(line: bytes | object) -> OneTask:
    if line is TOO_LONG:
        raise ValueError(f"a task line is over {MAX_INPUT_BYTES} bytes")
    try:
        return _decoder.decode(line)
    except msgspec.DecodeError as err:
        raise ValueError(str(err)) from None


def main(workspace: str | None) -> int:
    stop: list[int] = []
    stopping = Cancellation()       # rung with `stop`, so a wait for the next task ends at once

    def on_signal(signum: int) -> None:
        stop.append(signum)
        stopping.cancel()

    with on_stop_signals(on_signal):
        return _serve(workspace, stop, stopping)


def _serve(workspace: str | None, stop: list[int], stopping: Cancellation) -> int:
    out = _Out(sys.stdout.fileno())
    if not die_with_parent():
        return 1        # the engine worker that started this is gone: nobody wants the result
    root = workspace or os.environ.get(WORKSPACE_VARIABLE) or None
    lines = LineReader(sys.stdin.fileno(), stopping.fileno(), MAX_INPUT_BYTES)
    runner, code = _CallPath(root), 0
    try:
        while not stop:
            line = lines.next()
            if line is None:
                break
            try:
                one = _decode(line)
            except ValueError as err:
                out.send(ResultLine({"status": "failed",
                                     "error": f"scv batch --run-one needs one task as JSON on stdin ({err})"}))
                code = EXIT_USAGE
                continue
            result = runner.run(one, stop, out)
            out.send(ResultLine(result, note=runner.take_note()))
    finally:
        runner.close()
    return code


class _CallPath:
    """The call path, opened for the first task and kept for the next ones."""

    def __init__(self, root: str | None):
        self.root = root
        self.calls = None
        self.engine = None
        self.batch = "stdout"
        self.tracing: Run | None = None
        self._note: str | None = None     # for the next result line

    def _open(self) -> None:
        from scv.batch.local_engine import AgentCalls, LocalEngine
        if self.calls is None:
            self.calls = AgentCalls(self.root, 1)         # the orphan reconcile runs here
            self.engine = LocalEngine(self.calls, 1)
        else:
            from scv.config.load import scv_home
            from scv.delegations.reconcile import reconcile
            try:
                reconcile(scv_home())
            except OSError:
                pass
        self.engine.flow.batch = self.batch

    def run(self, one: OneTask, stop: list[int], out: _Out) -> dict[str, Any]:
        if stop:
            return {"agent": one.task.agent, "status": "cancelled"}
        self.batch = one.batch
        try:
            self._open()
            prepared = self.calls.prepare(one.task.agent_args())
        except ScvError as err:
            return {"agent": one.task.agent, "status": "failed", "error": str(err)}
        self.calls.trace = self._trace_under(one.trace)
        submission = Submission(Task(one.line, one.task, prepared), one.attempt)
        self.engine.submit(submission)
        cancelled = False
        while True:
            if stop and not cancelled:
                # RUNNING -> CANCELLING: the supervisor stops the agent's tree
                cancelled = True
                self.engine.cancel(submission.key)
            for event in self.engine.events(0.2):
                if isinstance(event, Progress):
                    out.send(ProgressLine(event.text))
                elif isinstance(event, Finished):
                    if self.tracing is not None:
                        # The runner outlives the driver's wait for this result: its spans go now.
                        self.tracing.flush()
                    return event.value

    def _trace_under(self, parent: TraceContext | None) -> Span:
        """The span this task's span goes under: the driver's batch span, in the driver's trace.
        The runner has no run span of its own: it serves tasks of any batch. A task of a driver
        that does not trace is not traced."""
        if parent is None:
            return NO_SPAN
        if self.tracing is None:
            self.tracing = start_run(None)      # after the supervisor (opened above): it starts a thread
            # This runner's stderr is a node's log nobody reads: the driver prints why, once.
            self._note = self.tracing.notice
        return self.tracing.span.remote(parent)

    def take_note(self) -> str | None:
        note, self._note = self._note, None
        return note

    def close(self) -> None:
        try:
            if self.engine is not None:
                self.engine.close()
            if self.calls is not None:
                self.calls.close()
        finally:
            if self.tracing is not None:
                self.tracing.finish()
