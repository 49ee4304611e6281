"""Executor of `read`: a byte range of a regular file beneath the workspace, as UTF-8."""

import os
import stat

from scv.core.safe_open import PathError, open_beneath
from workers.runtime import ToolFailure, WorkerContext


def _decode(data: bytes, offset: int, cut: bool, path: str) -> str:
    """Decodes the range; a character split by the limit is left for the next read."""
    if data and 0x80 <= data[0] < 0xC0:
        raise ToolFailure(f"offset {offset} falls inside a UTF-8 character of {path}; start at a character boundary")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        incomplete_tail = err.reason == "unexpected end of data" and err.end == len(data)
        if cut and incomplete_tail and err.start >= len(data) - 3:
            return data[: err.start].decode("utf-8")
        bad = offset + err.start
        raise ToolFailure(f"{path} is not valid UTF-8 text (invalid byte at offset {bad}); it may be a binary file, "
                          "which read cannot return") from None


def execute(args: dict, ctx: WorkerContext) -> dict:
    path, offset, limit = args["path"], args["offset"], args["limit"]
    try:
        fd = open_beneath(ctx.workspace_fd, args["parts"], os.O_RDONLY | os.O_NONBLOCK, shown=path,
                          directory=args["directory"])
    except PathError as err:
        raise ToolFailure(str(err)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailure(f"{path} is not a regular file; read only reads files")
        total = info.st_size
        if offset > total:
            raise ToolFailure(f"offset {offset} is past the end of {path}, which has {total} bytes")
        want = min(limit, total - offset)
        chunks, got = [], 0
        while got < want:
            chunk = os.pread(fd, want - got, offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    cut = offset + len(data) < total
    content = _decode(data, offset, cut, path)
    used = len(content.encode("utf-8")) if len(content) != len(data) else len(data)
    result = {"path": path, "content": content, "total_bytes": total, "truncated": offset + used < total,
              "offset": offset, "limit": limit}
    if result["truncated"]:
        result["next_offset"] = offset + used
    return result
