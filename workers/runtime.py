"""A worker's life: read one `Call`, run its executor, send one `Result`, exit.

Executors are plain functions `execute(args: dict, ctx: WorkerContext) -> dict`. A tool that
ran but failed raises `ToolFailure`, whose fields go into the result beside `error`. A live
worker (workers/live_runtime.py) serves many calls the same way, one at a time.
"""

import importlib
import itertools
import os
import select
import sys
from typing import Any, Callable

import msgspec

from scv.core.frames import FrameReader, frame
from scv.core.messages import (AgentPrivate, AgentResult, ApprovalRequest, Call, Progress, Result, decode_to_worker,
                               encode)
from workers.running.cancel_token import CancelToken

_ask_ids = itertools.count(1)


class ToolFailure(Exception):
    def __init__(self, message: str, private: AgentPrivate | None = None, **fields: Any):
        super().__init__(message)
        self.fields = fields
        self.private = private

    @classmethod
    def of(cls, message: str, result: AgentResult) -> "ToolFailure":
        """A failed agent turn: its result's fields and private part, with the sentence as `error`."""
        return cls(message, private=result.private, **result.public())


class Reply(msgspec.Struct, frozen=True):
    """An executor's result with a part for the supervisor only (see scv/core/messages.py)."""
    value: dict[str, Any]
    private: AgentPrivate | None = None


class WorkerContext(msgspec.Struct):
    call: Call
    workspace_fd: int
    token: CancelToken
    out_fd: int
    # Clean-up that need not hold up the result (a sandboxed call's temporary folder): run once
    # the result is sent, before the worker exits.
    after_result: list[Callable[[], None]] = []

    @property
    def workspace(self) -> str:
        return self.call.workspace

    @property
    def options(self) -> dict[str, Any]:
        return self.call.options

    def progress(self, line: str) -> None:
        send(self.out_fd, Progress(line=line[:500]))

    def ask(self, tool: str, risk: str, summary: str) -> bool:
        """Relays an approval request to the calling session's gate and waits for its answer;
        False when it is denied, nobody can answer, or the call is cancelled while waiting."""
        request_id = f"ask-{os.getpid()}-{next(_ask_ids)}"
        send(self.out_fd, ApprovalRequest(id=request_id, tool=tool, risk=risk, summary=summary))
        while request_id not in self.token.answers:
            if self.token.cancelled:
                return False
            select.select(self.token.fds(), [], [])
            self.token.check()
        return self.token.answers.pop(request_id)


def send(fd: int, message) -> None:
    data = frame(encode(message))
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_call(fd: int, reader: FrameReader, pending: list[bytes]) -> tuple[Call | None, list[bytes]]:
    """The next `Call` on the input, plus frames that arrived with it (a Cancel sent before the
    worker started comes in the same read and must not be lost); None at EOF. Blocks."""
    while True:
        while pending:
            message = decode_to_worker(pending.pop(0))
            if isinstance(message, Call):
                return message, pending
            # A Cancel or answer for a call that has already ended: nothing to do.
        chunk = os.read(fd, 65536)
        if not chunk:
            reader.close()
            return None, []
        pending = reader.feed(chunk)


def resolve(executor: str) -> Callable[..., Any]:
    module_name, _, func = executor.partition(":")
    return getattr(importlib.import_module(module_name), func)


def warm_up() -> None:
    """Run by a spare worker before its call arrives: touch the decode and encode paths so
    their pages are already private (copied on write) when the call's clock is running."""
    sample = Call(tool="warm", executor="warm:up", args={"a": [1, "b"]}, workspace="/", handle="w/0",
                  timeout_seconds=1.0, output_limit_bytes=1)
    decode_to_worker(encode(sample))
    encode(Result(ok=True, value={"content": "x", "n": 1, "t": True}))
    FrameReader().feed(frame(b"x"))


def open_workspace(call: Call) -> int | Result:
    try:
        return os.open(call.workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return Result(ok=False, value={"error": f"the workspace {call.workspace} cannot be opened ({exc.strerror})"})


def run_guarded(call: Call, work: Callable[[], dict | Reply | AgentResult]) -> Result:
    """Runs an executor's work and turns whatever it returned or raised into the call's result."""
    try:
        value = work()
        if isinstance(value, AgentResult):
            return Result(ok=True, value=value.public(), private=value.private)
        if isinstance(value, Reply):
            return Result(ok=True, value=value.value, private=value.private)
        return Result(ok=True, value=value)
    except ToolFailure as failure:
        return Result(ok=False, value={**failure.fields, "error": str(failure)}, private=failure.private)
    except MemoryError:
        limit = call.options.get("memory_mb")
        return Result(ok=False, value={"error": f"the {call.tool} call ran out of memory (the worker's ceiling is "
                                                f"{limit} MiB; tools.worker_memory_mb)"})
    except Exception as exc:   # an executor bug must still end in a result
        import traceback     # only here: every worker would pay for it at start-up
        traceback.print_exc(file=sys.stderr)
        return Result(ok=False, value={"error": f"the {call.tool} tool failed unexpectedly: {type(exc).__name__}: "
                                                f"{exc}"})


def main(in_fd: int, out_fd: int) -> int:
    reader = FrameReader()
    call, early = read_call(in_fd, reader, [])
    if call is None:
        raise SystemExit(3)     # the supervisor went away before sending the call
    os.set_blocking(in_fd, False)
    token = CancelToken(in_fd, reader, early, call_id=call.id)
    workspace_fd = open_workspace(call)
    if isinstance(workspace_fd, Result):
        send(out_fd, workspace_fd)
        return 0
    ctx = WorkerContext(call=call, workspace_fd=workspace_fd, token=token, out_fd=out_fd)
    send(out_fd, run_guarded(call, lambda: resolve(call.executor)(call.args, ctx)))
    # Closing the pipe now lets the supervisor go on while this process is torn down.
    os.close(out_fd)
    for work in ctx.after_result:
        work()
    return 0
