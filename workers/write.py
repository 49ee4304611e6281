"""Executor of `write`: a temporary file in the destination folder, flushed, then installed
atomically. A failed or interrupted write leaves the old file as it was."""

import errno
import hashlib
import os
import secrets
import stat

from scv.core.safe_open import PathError, describe, open_beneath
from workers.runtime import ToolFailure, WorkerContext

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY


def _open_parent(ctx: WorkerContext, dirs: list[str], shown: str) -> int:
    """The destination folder, created component by component where missing, never outside."""
    current = os.open(".", DIR_FLAGS | os.O_CLOEXEC, dir_fd=ctx.workspace_fd)
    try:
        for index, name in enumerate(dirs):
            try:
                os.mkdir(name, 0o777, dir_fd=current)
            except FileExistsError:
                pass
            except OSError as err:
                raise ToolFailure(str(describe(err, "/".join(dirs[: index + 1])))) from None
            try:
                nxt = open_beneath(current, [name], DIR_FLAGS, shown="/".join(dirs[: index + 1]))
            except PathError as err:
                raise ToolFailure(f"{err} (while opening the folder of {shown})") from None
            os.close(current)
            current = nxt
        return current
    except BaseException:
        os.close(current)
        raise


def _current_digest(dir_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _existing(dir_fd: int, name: str, path: str) -> os.stat_result | None:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise ToolFailure(f"{path} is a symbolic link; write to the path of the file it points to instead")
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"{path} exists and is not a regular file; choose another path")
    return info


def _open_temp(dir_fd: int, perms: int) -> tuple[int, str | None]:
    """An unnamed file in the destination folder (O_TMPFILE) where the file system has them, so a
    write killed midway leaves nothing behind; otherwise a hidden, uniquely named one."""
    try:
        return os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, perms, dir_fd=dir_fd), None
    except OSError as err:
        if err.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            raise
    name = f".scv-{secrets.token_hex(6)}.tmp"
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, perms, dir_fd=dir_fd)
    return fd, name


def _link_temp(tmp_fd: int, dir_fd: int, target: str) -> None:
    """Gives the unnamed temporary file a name; link() never replaces an existing one."""
    os.link(f"/proc/self/fd/{tmp_fd}", target, dst_dir_fd=dir_fd, follow_symlinks=True)


def execute(args: dict, ctx: WorkerContext) -> dict:
    path, mode, expected = args["path"], args["mode"], args["expected_sha256"]
    *dirs, name = args["parts"]
    data = args["content"].encode("utf-8")
    dir_fd = _open_parent(ctx, dirs, path)
    tmp_fd, tmp = None, None
    try:
        before = _existing(dir_fd, name, path)
        if mode == "create" and before is not None:
            raise ToolFailure(f"{path} already exists; use mode replace to overwrite it")
        if mode == "replace" and before is None:
            raise ToolFailure(f"{path} does not exist; use mode create to make it")
        perms = stat.S_IMODE(before.st_mode) if before is not None else 0o666 & ~_umask()
        tmp_fd, tmp = _open_temp(dir_fd, perms)
        os.fchmod(tmp_fd, perms)
        view = memoryview(data)
        while view:
            view = view[os.write(tmp_fd, view):]
        os.fsync(tmp_fd)
        if mode == "replace":
            if expected is not None:
                seen = _current_digest(dir_fd, name)
                if seen != expected:
                    raise ToolFailure(f"{path} changed since it was read (its sha256 is now {seen}, not "
                                      f"{expected}); read it again before writing", current_sha256=seen)
            _existing(dir_fd, name, path)
            if tmp is None:
                tmp = f".scv-{secrets.token_hex(6)}.tmp"
                _link_temp(tmp_fd, dir_fd, tmp)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            try:
                if tmp is None:
                    _link_temp(tmp_fd, dir_fd, name)
                else:
                    os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                    os.unlink(tmp, dir_fd=dir_fd)
            except FileExistsError:
                raise ToolFailure(f"{path} already exists; use mode replace to overwrite it") from None
        tmp = None
        os.fsync(dir_fd)
    except OSError as err:
        if err.errno == errno.ENOSPC:
            raise ToolFailure(f"no space left on the device while writing {path}; the old file is unchanged") from None
        raise ToolFailure(str(describe(err, path))) from None
    finally:
        if tmp_fd is not None:
            os.close(tmp_fd)
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
        os.close(dir_fd)
    return {"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "created": mode == "create"}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
