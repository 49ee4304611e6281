"""Copying an open file into a private temporary file (mode 0600) in a folder, for chat_attach's
outbox and chat_keep's copy across file systems. The temporary name is new (O_EXCL); on any
failure (a full disk, a file that grows past its ceiling, cancellation) it is removed, so a
failed copy leaves nothing behind. The caller then installs the copy under its final name.
"""

import hashlib
import os
import secrets
from dataclasses import dataclass

from workers.running.cancel_token import CancelToken

BLOCK = 1024 * 1024


class CopyTooLarge(Exception):
    pass


class CopyCancelled(Exception):
    pass


@dataclass(frozen=True)
class Copied:
    name: str           # the temporary name in the folder
    bytes: int
    sha256: str


def fsync_folder(dir_fd: int) -> None:
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def private_copy(source_fd: int, dir_fd: int, *, prefix: str, max_bytes: int | None, token: CancelToken | None,
                 write=os.write) -> Copied:
    """Copies `source_fd` from its start into a new 0600 file in `dir_fd`, flushed to disk.
    Raises CopyTooLarge past `max_bytes`, CopyCancelled, or the OSError that stopped it."""
    name = f"{prefix}{secrets.token_hex(8)}.part"
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    digest, total, at = hashlib.sha256(), 0, 0
    try:
        try:
            while True:
                if token is not None and token.check():
                    raise CopyCancelled()
                chunk = os.pread(source_fd, BLOCK, at)
                if not chunk:
                    break
                at += len(chunk)
                total += len(chunk)
                if max_bytes is not None and total > max_bytes:
                    raise CopyTooLarge()
                digest.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[write(fd, view):]
            os.fchmod(fd, 0o600)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    return Copied(name=name, bytes=total, sha256=digest.hexdigest())
