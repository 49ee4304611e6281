"""The chat log's format and its one writer (docs/chat-archive.md): what a chat bridge and the
tests use to record a conversation, so that the format has one owner.

An episode file is JSONL, one message a line (`Stored`: the message and its `index` in the
episode), and, only as its last line, the end marker `mark_new` writes. A new episode starts
with the first message after that marker, or after GAP without messages. Appends take the
conversation's lock, so bridges in several processes can share a conversation; a line cut by
a crash is closed before the next one is written, and readers skip it.
"""

import contextlib
import fcntl
import os
from datetime import datetime, timedelta
from typing import Any, Iterable, Iterator, Literal

import msgspec

from scv.core.chat.layout import (EPISODE_SUFFIX, KEPT_RECORD, LOCK_FILE, episode_id, episode_parts, episode_start,
                                  make_private_dirs)

GAP = timedelta(hours=8)
TAIL_CHUNK = 4096           # the first read from an episode's end; doubled while a line goes on
MAX_CHUNK = 1024 * 1024
Author = Literal["owner", "scv", "system"]
FileState = Literal["media", "kept", "gone", "not_saved", "sent"]


class FileEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    state: FileState
    path: str | None = None         # in the chat media (state "media") or the kept files ("kept")
    kind: Literal["image", "video", "voice", "file"] | None = None
    bytes: int | None = None


class Voice(msgspec.Struct, kw_only=True, omit_defaults=True):
    transcript: str | None = None
    seconds: float | None = None


class Message(msgspec.Struct, kw_only=True, omit_defaults=True):
    time: datetime                  # with its UTC offset: the wall clock it shows is the local time
    author: Author
    text: str = ""
    quote: str | None = None        # the text of the message it replied to
    files: list[FileEntry] = []
    voice: Voice | None = None


class Stored(Message, kw_only=True, omit_defaults=True):
    index: int


class EndMarker(msgspec.Struct, kw_only=True):
    end: Literal["new"]
    time: datetime


class Kept(msgspec.Struct, kw_only=True):
    time: datetime
    source: str = msgspec.field(name="from")
    kept: str = msgspec.field(name="to")


_encode = msgspec.json.Encoder().encode
stored_decoder = msgspec.json.Decoder(Stored)
marker_decoder = msgspec.json.Decoder(EndMarker)
_kept_decoder = msgspec.json.Decoder(Kept)


def decode_line(line: bytes) -> Stored | EndMarker | None:
    """A line of an episode file; None for a damaged or foreign line."""
    try:
        return stored_decoder.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    try:
        return marker_decoder.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def _aware(at: datetime, what: str) -> datetime:
    if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"the {what} must be a datetime with its UTC offset (the local time it was written)")
    return at


@contextlib.contextmanager
def _locked(conversation_dir: str) -> Iterator[None]:
    make_private_dirs(conversation_dir)
    fd = os.open(os.path.join(conversation_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _folders(folder: str, accept) -> list[str]:
    """Names in `folder` that `accept` takes, newest (greatest) first; links are passed over."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if accept(e.name) and not e.is_symlink()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(names, reverse=True)


def iter_episodes(conversation_dir: str) -> Iterator[str]:
    """Episode IDs newest first (IDs sort in time order; each sorts after the one before)."""
    for year in _folders(conversation_dir, lambda n: len(n) == 4 and n.isdigit()):
        for week in _folders(os.path.join(conversation_dir, year), lambda n: len(n) == 21):
            for name in _folders(os.path.join(conversation_dir, year, week), lambda n: n.endswith(EPISODE_SUFFIX)):
                episode = f"{year}/{week}/{name[:-len(EPISODE_SUFFIX)]}"
                if episode_start(episode) is not None:
                    yield episode


def newest_episode(conversation_dir: str) -> str | None:
    return next(iter_episodes(conversation_dir), None)


def complete_end(fd: int, size: int) -> int:
    """Where the file's last complete line ends (a line cut by a crash is after it)."""
    end, chunk = size, TAIL_CHUNK
    while end > 0:
        start = max(0, end - chunk)
        at = os.pread(fd, end - start, start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end, chunk = start, min(chunk * 2, MAX_CHUNK)
    return 0


def reverse_blocks(fd: int, end: int, chunk: int, budget: list[int] | None = None,
                   grow: bool = False) -> Iterator[bytes]:
    """The complete lines before `end` (which ends a line), a block at a time from the end: each
    block is whole lines joined by newlines. With `budget` ([bytes left]), reads no more than it
    allows; with `grow`, each block is twice the last (up to MAX_CHUNK)."""
    carry = b""
    while end > 0:
        size = chunk if budget is None else min(chunk, budget[0])
        if size <= 0:
            return
        start = max(0, end - size)
        data = os.pread(fd, end - start, start)
        if budget is not None:
            budget[0] -= len(data)
        block = data + carry
        if start > 0:
            cut = block.find(b"\n")
            if cut < 0:             # one line longer than the block: read further back
                carry = block
                end = start
                continue
            carry, block = block[:cut], block[cut + 1:]     # the rest of a line begun earlier
        yield block[:-1] if block.endswith(b"\n") else block
        end = start
        if grow:
            chunk = min(chunk * 2, MAX_CHUNK)


def last_line(fd: int, size: int) -> tuple[Stored | EndMarker | None, bool]:
    """The last valid line of an episode file, and whether the file ends inside a cut line."""
    end = complete_end(fd, size)
    for block in reverse_blocks(fd, end, TAIL_CHUNK, grow=True):
        for line in reversed(block.split(b"\n")):
            decoded = decode_line(line) if line.strip() else None
            if decoded is not None:
                return decoded, end < size
    return None, end < size


def _path(conversation_dir: str, episode: str) -> str:
    return os.path.join(conversation_dir, *episode_parts(episode))


def _append(path: str, data: bytes, sync: bool) -> None:
    created = not os.path.lexists(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    if created and sync:
        folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _current(conversation_dir: str) -> tuple[str | None, Stored | EndMarker | None, bool]:
    episode = newest_episode(conversation_dir)
    if episode is None:
        return None, None, False
    fd = os.open(_path(conversation_dir, episode), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        last, cut = last_line(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return episode, last, cut


def _new_episode(conversation_dir: str, first: datetime, after: str | None) -> str:
    """The ID for an episode starting at `first` (its wall clock); a second later while that ID
    is taken or would not sort after the newest (a clock set back)."""
    local = first.replace(tzinfo=None, microsecond=0)
    episode = episode_id(local)
    while os.path.lexists(_path(conversation_dir, episode)) or (after is not None and episode <= after):
        local += timedelta(seconds=1)
        episode = episode_id(local)
    make_private_dirs(os.path.dirname(_path(conversation_dir, episode)))
    return episode


def append_message(conversation_dir: str, message: Message | dict[str, Any], *, sync: bool = True) -> tuple[str, int]:
    """Records one message; returns its episode's ID and its index in that episode."""
    return append_messages(conversation_dir, [message], sync=sync)[0]


def append_messages(conversation_dir: str, messages: Iterable[Message | dict[str, Any]], *,
                    sync: bool = True) -> list[tuple[str, int]]:
    """Records messages in order under one lock (a bridge catching up, an import); returns each
    one's episode and index."""
    conversation_dir = os.fspath(conversation_dir)
    placed: list[tuple[str, int]] = []
    with _locked(conversation_dir):
        episode, last, cut = _current(conversation_dir)
        last_time, index = (last.time, last.index + 1) if isinstance(last, Stored) else (None, None)
        pending: list[bytes] = []
        for message in messages:
            if not isinstance(message, Message):
                message = msgspec.convert(message, Message)
            _aware(message.time, "message time")
            if index is None or message.time - last_time >= GAP:
                if pending:
                    _append(_path(conversation_dir, episode), b"".join(pending), sync)
                    pending = []
                # The rule: after /new (the marker is the last line) or eight quiet hours, a new episode.
                episode, index, cut = _new_episode(conversation_dir, message.time, episode), 0, False
            stored = Stored(index=index, **{f: getattr(message, f) for f in Message.__struct_fields__})
            pending.append((b"\n" if cut else b"") + _encode(stored) + b"\n")
            placed.append((episode, index))
            last_time, index, cut = message.time, index + 1, False
        if pending:
            _append(_path(conversation_dir, episode), b"".join(pending), sync)
    return placed


def mark_new(conversation_dir: str, at: datetime, *, sync: bool = True) -> str | None:
    """The owner sent `/new`: ends the current episode, so the next message starts another.
    Returns the episode it ended (None when there was none, or it had already ended)."""
    _aware(at, "time of /new")
    conversation_dir = os.fspath(conversation_dir)
    with _locked(conversation_dir):
        episode, last, cut = _current(conversation_dir)
        if episode is None or not isinstance(last, Stored):
            return None
        _append(_path(conversation_dir, episode), (b"\n" if cut else b"") + _encode(EndMarker(end="new", time=at))
                + b"\n", sync)
    return episode


def record_kept(conversation_dir: str, source: str, kept: str, at: datetime) -> None:
    """Notes that the chat media file `source` is now the kept file `kept` (chat_keep)."""
    _aware(at, "time of keeping")
    conversation_dir = os.fspath(conversation_dir)
    with _locked(conversation_dir):
        _append(os.path.join(conversation_dir, KEPT_RECORD), _encode(Kept(time=at, source=source, kept=kept)) + b"\n",
                True)


def read_kept(conversation_dir: str, limit_bytes: int = 16 * 1024 * 1024) -> dict[str, str]:
    """Media path -> kept path, from the conversation's record of kept files."""
    try:
        fd = os.open(os.path.join(conversation_dir, KEPT_RECORD), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        data = os.pread(fd, limit_bytes, 0)
    finally:
        os.close(fd)
    kept = {}
    for line in data.split(b"\n"):
        try:
            entry = _kept_decoder.decode(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
        kept[entry.source] = entry.kept
    return kept

