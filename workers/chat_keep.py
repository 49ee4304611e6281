"""Executor of `chat_keep`: the media file is linked under its kept name (never replacing a
file: a clash gets a new name), recorded, and only then removed from the media. Across file
systems it is first copied to a private temporary file beside the kept files and that copy is
linked, so a failed copy (a full disk) leaves nothing under the kept name and the original where
it was.
"""

import errno
import os
import stat
from datetime import datetime
from typing import Callable

from scv.core.chat.archive import read_kept, record_kept
from scv.core.chat.layout import make_private_dirs
from workers.private_copy import CopyCancelled, fsync_folder, private_copy
from workers.runtime import ToolFailure, WorkerContext

MAX_NAMES = 1000
DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def candidates(name: str):
    """name, then `stem (2).ext`, `stem (3).ext`, …"""
    yield name
    stem, dot, ext = name.rpartition(".")
    if not stem:            # no dot, or a leading one only
        stem, dot, ext = name, "", ""
    for n in range(2, MAX_NAMES + 1):
        yield f"{stem} ({n}){dot}{ext}"


def link_new_name(link: Callable[[str], None], name: str) -> str:
    """Links under the first free name; a name that exists is never replaced."""
    for candidate in candidates(name):
        try:
            link(candidate)
            return candidate
        except FileExistsError:
            continue
    raise ToolFailure(f"{MAX_NAMES} kept files are already named like {name}; rename some of them")


def _already_kept(args: dict) -> dict:
    kept_dir, name = args["kept"], args["name"]
    try:
        info = os.stat(os.path.join(kept_dir, name), follow_symlinks=False)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"{args['path']} is not one of this conversation's kept files")
    return {"kept": os.path.join(kept_dir, name), "already": True, "bytes": info.st_size}


def _open_kept(kept_dir: str) -> int:
    make_private_dirs(kept_dir)
    return os.open(kept_dir, DIR)


def _media_file(media_fd: int, name: str, path: str) -> tuple[int, os.stat_result]:
    """The file open, checked: a regular file and not a link, the same before and after opening."""
    info = os.stat(name, dir_fd=media_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        raise ToolFailure(f"chat_keep refused {path}: it is a symbolic link; only a regular file the user sent can "
                          "be kept")
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"chat_keep refused {path}: it is not a regular file")
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=media_fd)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
        os.close(fd)
        raise ToolFailure(f"chat_keep refused {path}: it changed while it was being checked; try again")
    return fd, opened


def _not_in_media(args: dict) -> dict:
    kept = read_kept(args["log"]).get(args["path"])
    if kept is not None:
        return {"kept": kept, "already": True}
    raise ToolFailure(f"{args['path']} is not in the chat media (it may have expired after keep_days, or never been "
                      "saved); nothing was kept")


# Link failures that mean "not on this file system": copy instead.
COPY_INSTEAD = (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP)


def keep(args: dict, ctx: WorkerContext, *, link=os.link) -> dict:
    if args["where"] == "kept":
        return _already_kept(args)
    path, name = args["path"], args["name"]
    try:
        media_fd = os.open(args["media"], DIR)
    except OSError:
        return _not_in_media(args)
    kept_fd = fd = None
    try:
        try:
            fd, info = _media_file(media_fd, name, path)
        except FileNotFoundError:
            return _not_in_media(args)
        try:
            kept_fd = _open_kept(args["kept"])
        except OSError as err:
            raise ToolFailure(f"the kept files folder {args['kept']} cannot be opened ({err.strerror}); nothing was "
                              "kept") from None
        across = False
        try:
            kept_name = link_new_name(lambda target: link(name, target, src_dir_fd=media_fd, dst_dir_fd=kept_fd,
                                                          follow_symlinks=False), name)
        except OSError as err:
            if err.errno not in COPY_INSTEAD:
                raise ToolFailure(f"{path} could not be kept ({err.strerror}); it is still in the chat media") from None
            across = True
            kept_name = _copy_across(fd, kept_fd, name, path, ctx)
        kept_path = os.path.join(args["kept"], kept_name)
        try:
            fsync_folder(kept_fd)
            record_kept(args["log"], path, kept_path, datetime.now().astimezone())
        except OSError as err:
            os.unlink(kept_name, dir_fd=kept_fd)
            raise ToolFailure(f"{path} could not be kept: the record of kept files cannot be written "
                              f"({err.strerror}); it is still in the chat media") from None
        # The original goes last, and only while it is still the file that was kept.
        now = os.stat(name, dir_fd=media_fd, follow_symlinks=False)
        if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
            os.unlink(name, dir_fd=media_fd)
            fsync_folder(media_fd)
        return {"kept": kept_path, "from": path, "bytes": info.st_size, "renamed": kept_name != name,
                "copied_across_file_systems": across}
    finally:
        for open_fd in (fd, kept_fd, media_fd):
            if open_fd is not None:
                os.close(open_fd)


def _copy_across(fd: int, kept_fd: int, name: str, path: str, ctx: WorkerContext) -> str:
    try:
        copied = private_copy(fd, kept_fd, prefix=".keep-", max_bytes=None, token=ctx.token)
    except CopyCancelled:
        raise ToolFailure(f"chat_keep was cancelled while copying {path}; nothing was kept") from None
    except OSError as err:
        raise ToolFailure(f"{path} could not be copied to the kept files ({err.strerror}); nothing was kept and the "
                          "file is still in the chat media") from None
    try:
        return link_new_name(lambda target: os.link(copied.name, target, src_dir_fd=kept_fd, dst_dir_fd=kept_fd,
                                                    follow_symlinks=False), name)
    finally:
        os.unlink(copied.name, dir_fd=kept_fd)


def execute(args: dict, ctx: WorkerContext) -> dict:
    return keep(args, ctx)
