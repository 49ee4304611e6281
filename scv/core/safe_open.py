"""Opening a workspace path so that it cannot land outside the workspace, checked at use.

`open_beneath` resolves the path relative to a directory descriptor of the workspace. It uses
Linux's openat2 with RESOLVE_BENEATH where the kernel has it (the kernel refuses every escape,
including absolute and `..` symlinks, atomically), and otherwise walks one component at a time
with O_NOFOLLOW, following in-workspace symlinks itself. Errors are translated here into one
sentence naming the path.
"""

import ctypes
import errno
import os
import stat
import struct

from scv.core.errors import ScvError

_SYS_OPENAT2 = 437          # the same number on every architecture with the generic table
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_OPEN_HOW = struct.Struct("QQQ")
MAX_SYMLINKS = 40

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _syscall = _libc.syscall
    _syscall.restype = ctypes.c_long
except (OSError, AttributeError):   # no usable libc: the walker does the job
    _syscall = None
_openat2_works = _syscall is not None


class PathError(ScvError):
    """A path could not be opened inside the workspace."""


def describe(err: OSError, shown: str) -> PathError:
    code = err.errno
    if code == errno.EXDEV:
        return PathError(f"{shown} leads outside the workspace (through a symbolic link or '..'); use a path inside it")
    if code == errno.ENOENT:
        return PathError(f"{shown} does not exist in the workspace")
    if code == errno.ENOTDIR:
        return PathError(f"a parent of {shown} is not a directory")
    if code == errno.ELOOP:
        return PathError(f"{shown} goes through too many symbolic links or ends in one")
    if code == errno.EISDIR:
        return PathError(f"{shown} is a directory, not a file")
    if code in (errno.EACCES, errno.EPERM):
        return PathError(f"permission denied for {shown}")
    if code == errno.EEXIST:
        return PathError(f"{shown} already exists")
    if code == errno.ENAMETOOLONG:
        return PathError(f"{shown} is too long for the file system")
    return PathError(f"{shown}: {os.strerror(code or 0)}")


def not_a_directory(shown: str) -> PathError:
    """ENOTDIR for the last name of a path that ends in '/': the name exists but is no directory."""
    return PathError(f"{shown} is not a directory, yet a path ending in '/' must name one; drop the trailing '/' "
                     "to name the file")


def _openat2(dir_fd: int, path: str, flags: int, mode: int, resolve: int = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS) -> int:
    how = ctypes.create_string_buffer(_OPEN_HOW.pack(flags, mode, resolve))
    fd = _syscall(_SYS_OPENAT2, ctypes.c_int(dir_fd), os.fsencode(path), how, ctypes.c_size_t(_OPEN_HOW.size))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return fd


def _walk(root_fd: int, parts: list[str], flags: int, mode: int) -> int:
    """Component-wise resolution; `..` and absolute links that leave the root raise EXDEV."""
    stack = [os.dup(root_fd)]
    pending = list(parts)
    links = 0
    try:
        while pending:
            name = pending.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, "escapes")
                os.close(stack.pop())
                continue
            last = not pending
            here = stack[-1]
            try:
                target = os.readlink(name, dir_fd=here)
            except OSError as err:
                if err.errno not in (errno.EINVAL, errno.ENOENT):
                    raise
                target = None
            if target is not None:
                if last and flags & os.O_NOFOLLOW:
                    raise OSError(errno.ELOOP, "final component is a link")
                links += 1
                if links > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, "too many links")
                if target.startswith("/"):
                    raise OSError(errno.EXDEV, "absolute link")
                pending[:0] = target.split("/")
                continue
            if last:
                return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=here)
            stack.append(os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=here))
        # The path resolved to a directory on the stack (for example "a/..").
        return os.open(".", flags, mode, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def open_beneath(root_fd: int, parts: list[str], flags: int, mode: int = 0o666, *, shown: str | None = None,
                 walker: bool = False, directory: bool = False) -> int:
    """Opens `parts` (already lexically checked) beneath `root_fd`; raises PathError. With `directory`
    (the path ended in '/', see scv.core.paths.names_directory) anything but a directory is ENOTDIR."""
    fd = _open_beneath(root_fd, parts, flags, mode, shown=shown, walker=walker)
    if directory:
        try:
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        except BaseException:
            os.close(fd)
            raise
        if not is_dir:
            os.close(fd)
            raise not_a_directory(shown or "/".join(parts) + "/")
    return fd


def _open_beneath(root_fd: int, parts: list[str], flags: int, mode: int, *, shown: str | None,
                  walker: bool) -> int:
    global _openat2_works
    shown = shown or "/".join(parts)
    flags |= os.O_CLOEXEC
    if not flags & os.O_CREAT and (flags & os.O_TMPFILE) != os.O_TMPFILE:
        mode = 0     # openat2 refuses a mode without O_CREAT
    try:
        if _openat2_works and not walker:
            try:
                return _openat2(root_fd, "/".join(parts), flags, mode)
            except OSError as err:
                if err.errno != errno.ENOSYS:
                    raise
                _openat2_works = False
        return _walk(root_fd, parts, flags, mode)
    except OSError as err:
        raise describe(err, shown) from None


def _walk_without_links(root_fd: int, parts: list[str], flags: int, mode: int) -> int:
    here = os.dup(root_fd)
    try:
        for index, name in enumerate(parts):
            if index == len(parts) - 1:
                return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=here)
            # O_PATH with O_NOFOLLOW would open a link itself: fstat tells.
            step = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=here)
            os.close(here)
            here = step
            kind = os.fstat(here).st_mode
            if stat.S_ISLNK(kind):
                raise OSError(errno.ELOOP, "a link")
            if not stat.S_ISDIR(kind):
                raise OSError(errno.ENOTDIR, "not a directory")
        raise OSError(errno.EINVAL, "no name")
    finally:
        os.close(here)


def open_exact(root_fd: int, parts: list[str], flags: int, mode: int = 0o666, *, walker: bool = False) -> int:
    """Opens `parts` beneath `root_fd` through no symbolic link at all (the last component
    included) and no `..`: for paths recorded in canonical form earlier, so that a component
    swapped for a link since then is refused. Raises OSError (ELOOP for a link, EXDEV for an
    escape); the caller says what the path was for."""
    global _openat2_works
    flags |= os.O_CLOEXEC
    if not flags & os.O_CREAT:
        mode = 0
    if any(name in ("", ".", "..") or "/" in name for name in parts):
        raise OSError(errno.EXDEV, "not a plain name")
    if _openat2_works and not walker:
        try:
            return _openat2(root_fd, "/".join(parts), flags, mode,
                            _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
        except OSError as err:
            if err.errno != errno.ENOSYS:
                raise
            _openat2_works = False
    return _walk_without_links(root_fd, parts, flags, mode)
