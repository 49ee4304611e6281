"""Executor of `read_skill`: at most `limit` bytes of a discovered skill's SKILL.md.

The root must still be the folder discovered (same device and inode), and the skill folder is
opened beneath it by its canonical components with no symbolic link anywhere: a folder swapped
for a link since the session started is refused, wherever the link points.
"""

import errno
import os
import stat

from scv.core.safe_open import open_exact
from workers.runtime import ToolFailure, WorkerContext


def _open_root(root: str, root_id: list[int], name: str) -> int:
    try:
        fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise ToolFailure(f"skill {name} cannot be read: its root {root} is gone ({err.strerror}); start a new "
                          "session to discover skills again") from None
    info = os.fstat(fd)
    if [info.st_dev, info.st_ino] != root_id:
        os.close(fd)
        raise ToolFailure(f"skill {name} is refused: its root {root} is not the folder discovered when the session "
                          "started; start a new session to discover skills again")
    return fd


def _whole_characters(data: bytes) -> bytes:
    """Drops a UTF-8 character that the limit cut in two."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if length <= back else data[:-back]
    return data


def execute(args: dict, ctx: WorkerContext) -> dict:
    name, root, limit = args["name"], args["root"], args["limit"]
    folder = os.path.join(root, *args["folder"])
    root_fd = _open_root(root, args["root_id"], name)
    try:
        fd = open_exact(root_fd, [*args["folder"], "SKILL.md"], os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EXDEV):
            raise ToolFailure(f"skill {name} is refused: {folder} or its SKILL.md is now a symbolic link, which it "
                              f"was not when the session started; read_skill only reads skills inside {root}") from None
        raise ToolFailure(f"skill {name} cannot be read: {folder}/SKILL.md {os.strerror(err.errno or 0).lower()}") \
            from None
    finally:
        os.close(root_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailure(f"skill {name} is refused: its SKILL.md is no longer a regular file")
        data = os.pread(fd, limit, 0)
    finally:
        os.close(fd)
    truncated = info.st_size > len(data)
    content = (_whole_characters(data) if truncated else data).decode("utf-8", "replace")
    return {"name": name, "folder": folder, "content": content, "bytes": info.st_size, "truncated": truncated}
