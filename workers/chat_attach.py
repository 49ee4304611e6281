"""Executor of `chat_attach`: checks the file again, opens it without following a final link,
checks it once more through the handle (the path the kernel opened, its type and size), then
copies it into the outbox (0600) and writes its delivery record. The copy is installed before
the record, and each is complete before it gets its name, so the bridge never sees half of one.
"""

import errno
import os
import secrets
from datetime import datetime, timezone
from typing import Callable

import msgspec

from scv.core.chat.layout import make_private_dirs
from scv.core.chat.refusals import MAX_BYTES, AttachRules, file_refusal, path_refusal, refused
from workers.private_copy import CopyCancelled, CopyTooLarge, fsync_folder, private_copy
from workers.runtime import ToolFailure, WorkerContext

IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")
VIDEO_BRANDS = (b"isom", b"iso2", b"mp41", b"mp42", b"avc1", b"M4V ", b"qt  ", b"3gp4", b"3gp5", b"3g2a", b"dash")


def kind_of(head: bytes) -> str:
    """image (PNG, JPEG, GIF, WebP, BMP), video (MP4, QuickTime, WebM/Matroska, AVI) or file, by content."""
    if head.startswith(IMAGE_MAGIC):
        return "image"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "video"
    if head[4:8] == b"ftyp" and head[8:12] in VIDEO_BRANDS:
        return "video"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "video"
    return "file"


def _open_outbox(outbox: str) -> int:
    try:
        make_private_dirs(outbox)
        return os.open(outbox, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        raise ToolFailure(f"the chat outbox {outbox} cannot be opened ({err.strerror}); nothing was sent") from None


def _opened_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        raise ToolFailure("chat_attach cannot check the opened file (/proc is not mounted); nothing was sent") \
            from None


def _open_checked(rules: AttachRules, given: str, absolute: str, between: Callable[[], None]) -> tuple[int, str]:
    """The file, open, and the path the kernel opened; every refusal is decided on the resolved
    path first and then again through the handle."""
    resolved = os.path.realpath(absolute)
    clause = path_refusal(rules, given, resolved)
    if clause is None:
        try:
            clause = file_refusal(os.stat(resolved))
        except FileNotFoundError:
            raise ToolFailure(refused(given, "it does not exist")) from None
    if clause is not None:
        raise ToolFailure(refused(given, clause))
    between()       # a test's hook: what changes here must be caught below
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ToolFailure(refused(given, "it became a symbolic link while it was being checked")) from None
        raise ToolFailure(refused(given, f"it cannot be opened ({err.strerror})")) from None
    try:
        opened = _opened_path(fd)
        clause = file_refusal(os.fstat(fd)) or path_refusal(rules, given, opened)
        if clause is None and opened != resolved:
            clause = "it changed while it was being checked (the path now leads elsewhere)"
        if clause is not None:
            raise ToolFailure(refused(given, clause))
        return fd, opened
    except BaseException:
        os.close(fd)
        raise


def _record(outbox_fd: int, record: dict) -> str:
    """The delivery record, written whole under a temporary name and then renamed into place."""
    name = f"{record['id']}.json"
    temp = f".{record['id']}.json.part"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=outbox_fd)
    try:
        try:
            data = msgspec.json.encode(record) + b"\n"
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=outbox_fd, dst_dir_fd=outbox_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=outbox_fd)
        except OSError:
            pass
        raise
    return name


def _suffix(name: str) -> str:
    _, dot, ext = name.rpartition(".")
    return f".{ext.lower()}" if dot and 0 < len(ext) <= 8 and ext.isascii() and ext.isalnum() else ""


def attach(args: dict, ctx: WorkerContext, *, between: Callable[[], None] = lambda: None) -> dict:
    rules = AttachRules.from_dict(args["rules"])
    given = args["path"]
    fd, opened = _open_checked(rules, given, args["absolute"], between)
    outbox_fd = None
    installed = None
    try:
        kind = kind_of(os.pread(fd, 16, 0))
        outbox_fd = _open_outbox(rules.outbox)
        try:
            copied = private_copy(fd, outbox_fd, prefix=".attach-", max_bytes=MAX_BYTES, token=ctx.token)
        except CopyTooLarge:
            raise ToolFailure(refused(given, f"it grew past {MAX_BYTES // (1024 * 1024)} MiB while it was being "
                                             "copied")) from None
        except CopyCancelled:
            raise ToolFailure(f"chat_attach was cancelled while copying {given}; nothing was sent") from None
        except OSError as err:
            raise ToolFailure(f"{given} could not be copied into the chat outbox ({err.strerror}); nothing was "
                              "sent") from None
        now = datetime.now(timezone.utc)
        delivery = f"{now.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(6)}"
        name = os.path.basename(opened)
        installed = delivery + _suffix(name)
        os.rename(copied.name, installed, src_dir_fd=outbox_fd, dst_dir_fd=outbox_fd)
        record = {"version": 1, "id": delivery, "file": installed, "name": name, "kind": kind, "bytes": copied.bytes,
                  "sha256": copied.sha256, "caption": args.get("caption"), "channel": args["channel"],
                  "source": opened, "created": now.isoformat(timespec="seconds")}
        try:
            record_name = _record(outbox_fd, record)
            fsync_folder(outbox_fd)
        except OSError as err:
            raise ToolFailure(f"the delivery record of {given} could not be written ({err.strerror}); nothing was "
                              "sent") from None
        installed = None        # delivered to the outbox: the bridge owns it now
    finally:
        os.close(fd)
        if installed is not None and outbox_fd is not None:
            try:
                os.unlink(installed, dir_fd=outbox_fd)
            except OSError:
                pass
        if outbox_fd is not None:
            os.close(outbox_fd)
    result = {"name": name, "kind": kind, "bytes": copied.bytes, "copy": os.path.join(rules.outbox, record["file"]),
              "delivery": os.path.join(rules.outbox, record_name), "sent": "after the reply text"}
    if args.get("caption"):
        result["caption"] = args["caption"]
    return result


def execute(args: dict, ctx: WorkerContext) -> dict:
    return attach(args, ctx)
