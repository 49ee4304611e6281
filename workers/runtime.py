"""A worker's life: read one `Call`, run its executor, send one `Result`, exit.

Executors are plain functions `execute(args: dict, ctx: WorkerContext) -> dict`. A tool that
ran but failed raises `ToolFailure`, whose fields go into the result beside `error`.
"""

import importlib
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from scv.frames import FrameReader, frame
from scv.messages import Call, Progress, Result, decode_to_worker, encode
from workers.cancel_token import CancelToken


class ToolFailure(Exception):
    def __init__(self, message: str, **fields: Any):
        super().__init__(message)
        self.fields = fields


@dataclass
class WorkerContext:
    call: Call
    workspace_fd: int
    token: CancelToken
    out_fd: int

    @property
    def workspace(self) -> str:
        return self.call.workspace

    @property
    def options(self) -> dict[str, Any]:
        return self.call.options

    def progress(self, line: str) -> None:
        send(self.out_fd, Progress(line=line[:500]))


def send(fd: int, message) -> None:
    data = frame(encode(message))
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_call(fd: int) -> tuple[Call, FrameReader, list[bytes]]:
    """The call, plus the reader and any later frames that arrived with it (a Cancel sent
    before the worker started comes in the same read and must not be lost)."""
    reader = FrameReader()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            reader.close()
            raise SystemExit(3)     # the supervisor went away before sending the call
        payloads = reader.feed(chunk)
        if payloads:
            message = decode_to_worker(payloads[0])
            if not isinstance(message, Call):
                raise SystemExit(3)
            return message, reader, payloads[1:]


def resolve(executor: str):
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


def main(in_fd: int, out_fd: int) -> int:
    call, reader, early = _read_call(in_fd)
    os.set_blocking(in_fd, False)
    token = CancelToken(in_fd, reader, early)
    try:
        workspace_fd = os.open(call.workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        send(out_fd, Result(ok=False, value={"error": f"the workspace {call.workspace} cannot be opened ({exc.strerror})"}))
        return 0
    ctx = WorkerContext(call=call, workspace_fd=workspace_fd, token=token, out_fd=out_fd)
    try:
        value = resolve(call.executor)(call.args, ctx)
        result = Result(ok=True, value=value)
    except ToolFailure as failure:
        result = Result(ok=False, value={**failure.fields, "error": str(failure)})
    except MemoryError:
        limit = call.options.get("memory_mb")
        result = Result(ok=False, value={"error": f"the {call.tool} call ran out of memory (the worker's ceiling is "
                                                  f"{limit} MiB; tools.worker_memory_mb)"})
    except Exception as exc:   # an executor bug must still end in a result
        traceback.print_exc(file=sys.stderr)
        result = Result(ok=False, value={"error": f"the {call.tool} tool failed unexpectedly: {type(exc).__name__}: {exc}"})
    send(out_fd, result)
    # Closing the pipe now lets the supervisor go on while this process is torn down.
    os.close(out_fd)
    return 0
