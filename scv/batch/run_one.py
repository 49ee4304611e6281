"""`scv batch --run-one`: runs one batch task on this machine for an engine that runs tasks
elsewhere (a Ray node). It reads the task as JSON on stdin, writes JSON lines on stdout:
`{"type": "progress", "text": ...}` lines, then exactly one `{"type": "result", "result": {...}}`
with the result object a local task gets, and exits 0 (2 when the input is not a task).

- SIGTERM (or SIGINT) cancels the task: SCV's own teardown stops the agent's whole tree, setsid
  escapees included, within the cancel budget, and the result says `cancelled`.
- It asks the kernel for SIGTERM when its parent dies (PR_SET_PDEATHSIG), so a killed engine
  worker still triggers the teardown. The signal follows the parent *thread*: start it from the
  main thread of the engine's task. `SCV_RUN_ONE_PARENT` names the parent's pid, to catch a
  parent that died before the request was made.
- Like every long-lived SCV command it reconciles orphans first: what an earlier runner killed
  with SIGKILL left behind on this machine is stopped when the next task starts here.

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
from scv.errors import ScvError

PARENT_VARIABLE = "SCV_RUN_ONE_PARENT"
WORKSPACE_VARIABLE = "SCV_NODE_WORKSPACE"
MAX_INPUT_BYTES = 1 << 20
PR_SET_PDEATHSIG = 1
EXIT_BAD_INPUT = 2


class OneTask(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    task: TaskLine
    line: int = 0
    attempt: int = 1


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(OneTask)


def encode_task(task: TaskLine, line: int, attempt: int) -> bytes:
    return _encoder.encode(OneTask(task=task, line=line, attempt=attempt))


class _Out:
    """JSON lines on stdout; a reader that went away (its engine worker died) is not an error."""

    def __init__(self, fd: int):
        self.fd = fd
        self.broken = False

    def send(self, message: dict[str, Any]) -> None:
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


def _read_task(stream) -> OneTask:
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise ValueError(f"it is over {MAX_INPUT_BYTES} bytes")
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as err:
        raise ValueError(str(err)) from None


def main(workspace: str | None) -> int:
    stop: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.append(signum))
    out = _Out(sys.stdout.fileno())
    if not die_with_parent():
        return 1        # the engine worker that started this is gone: nobody wants the result
    try:
        one = _read_task(sys.stdin.buffer)
    except (ValueError, OSError) as err:
        out.send({"type": "result", "result": {"status": "failed", "error": f"scv batch --run-one needs one task as "
                                                                             f"JSON on stdin ({err})"}})
        return EXIT_BAD_INPUT
    root = workspace or os.environ.get(WORKSPACE_VARIABLE) or None
    out.send({"type": "result", "result": _run(one, root, stop, out)})
    return 0


def _run(one: OneTask, root: str | None, stop: list[int], out: _Out) -> dict[str, Any]:
    from scv.batch.local_engine import AgentCalls, LocalEngine

    if stop:
        return {"agent": one.task.agent, "status": "cancelled"}
    try:
        calls = AgentCalls(root, 1)
    except ScvError as err:
        return {"agent": one.task.agent, "status": "failed", "error": str(err)}
    try:
        try:
            prepared = calls.prepare(one.task.agent_args())
        except ScvError as err:
            return {"agent": one.task.agent, "status": "failed", "error": str(err)}
        engine = LocalEngine(calls, 1)
        submission = Submission(Task(one.line, one.task, prepared), one.attempt)
        engine.submit(submission)
        cancelled = False
        try:
            while True:
                if stop and not cancelled:
                    # RUNNING -> CANCELLING: the supervisor stops the agent's tree
                    cancelled = True
                    engine.cancel(submission.key)
                for event in engine.events(0.2):
                    if isinstance(event, Progress):
                        out.send({"type": "progress", "text": event.text})
                    elif isinstance(event, Finished):
                        return event.value
        finally:
            engine.close()
    finally:
        calls.close()
