"""Reading one conversation's chat log (the format of `scv.chat.archive`): search, the list of
episodes, and an episode's messages. Every read is bounded: `budget` is the bytes of log a
call may still read, and files are read a block at a time, so memory does not grow with the log.
Episode files are opened beneath the conversation folder through no symbolic link.
"""

import os
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterator

from scv.chat.archive import (EndMarker, FileEntry, Stored, complete_end, decode_line, iter_episodes, read_kept,
                              reverse_blocks)
from scv.chat.layout import episode_parts, episode_start
from scv.safe_open import open_exact

BLOCK = 1024 * 1024
HEAD = 64 * 1024
MESSAGE_CHARS = 8000
EXCERPT_CHARS = 240
OPENING_CHARS = 200
_JSON_ESCAPED = frozenset('"\\') | frozenset(chr(c) for c in range(0x20)) | {"\x7f", "\u2028", "\u2029"}


@dataclass(frozen=True)
class Files:
    """How a message's files are shown now: kept, still in the chat media, or gone."""
    media: str
    kept: dict[str, str]

    @classmethod
    def of(cls, conversation_dir: str, media: str) -> "Files":
        return cls(media=media, kept=read_kept(conversation_dir))

    def show(self, entry: FileEntry) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": entry.name}
        if entry.state == "media":
            if entry.path in self.kept:
                shown.update(state="kept", path=self.kept[entry.path])
            elif (entry.path and os.path.dirname(entry.path) == self.media and os.path.lexists(entry.path)):
                shown.update(state="media", path=entry.path)
            else:
                shown["state"] = "gone"
        elif entry.state == "kept" and entry.path:
            shown.update(state="kept", path=entry.path)
        else:
            shown["state"] = entry.state
        for key in ("kind", "bytes"):
            if getattr(entry, key) is not None:
                shown[key] = getattr(entry, key)
        return shown


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def local_time(message: Stored | EndMarker) -> str:
    return message.time.isoformat(timespec="seconds")


def show_message(message: Stored, files: Files) -> dict[str, Any]:
    text, cut = _cut(message.text, MESSAGE_CHARS)
    shown: dict[str, Any] = {"index": message.index, "time": local_time(message), "author": message.author,
                             "text": text}
    if cut:
        shown["text_truncated"] = True
    if message.quote:
        shown["quote"] = _cut(message.quote, MESSAGE_CHARS)[0]
    if message.files:
        shown["files"] = [files.show(entry) for entry in message.files]
    if message.voice is not None and message.voice.transcript is not None:
        shown["transcript"] = _cut(message.voice.transcript, MESSAGE_CHARS)[0]
    return shown


class Log:
    """One conversation folder, opened once: episodes listed newest first, opened through no link."""

    def __init__(self, conversation_dir: str):
        self.path = conversation_dir
        try:
            self.fd: int | None = os.open(conversation_dir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.fd = None      # nothing recorded yet

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def episodes(self) -> Iterator[str]:
        return iter_episodes(self.path) if self.fd is not None else iter(())

    def open(self, episode: str) -> int | None:
        if self.fd is None:
            return None
        try:
            return open_exact(self.fd, episode_parts(episode), os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None


# --- search ----------------------------------------------------------------------------------

def _fields(message: Stored) -> Iterator[tuple[str, str]]:
    yield "text", message.text
    if message.quote:
        yield "quote", message.quote
    for entry in message.files:
        yield "file", entry.name
    if message.voice is not None and message.voice.transcript:
        yield "voice", message.voice.transcript


def _excerpt(text: str, at: int) -> str:
    start = max(0, at - EXCERPT_CHARS // 3)
    piece = text[start:start + EXCERPT_CHARS]
    return ("…" if start else "") + piece + ("…" if start + EXCERPT_CHARS < len(text) else "")


def _match(message: Stored, words: list[str]) -> dict[str, Any] | None:
    fields = list(_fields(message))
    folded = " \n".join(value.casefold() for _, value in fields)
    if not all(word in folded for word in words):
        return None
    for name, value in fields:
        at = value.casefold().find(words[0])
        if at >= 0:
            return {"in": name, "excerpt": _excerpt(value, at)}
    return None


def search(log: Log, query: str, limit: int, budget: list[int]) -> tuple[list[dict[str, Any]], bool]:
    """Messages holding every word of `query` (ignoring case), newest first."""
    words = [word.casefold() for word in query.split()]
    # Words that JSON writes escaped cannot be looked for in the raw line; the decoded one decides.
    plain = [word for word in words if not (_JSON_ESCAPED & set(word))]
    hits: list[dict[str, Any]] = []
    for episode in log.episodes():
        if budget[0] <= 0:
            return hits, True
        fd = log.open(episode)
        if fd is None:
            continue
        try:
            end = complete_end(fd, os.fstat(fd).st_size)
            for lines in reverse_blocks(fd, end, BLOCK, budget):
                folded_block = b"\n".join(lines).decode("utf-8", "replace").casefold()
                escaped = "\\u" in folded_block
                if not escaped and not all(word in folded_block for word in plain):
                    continue
                folded_lines = folded_block.split("\n")
                for index in range(len(lines) - 1, -1, -1):
                    if not escaped and not all(word in folded_lines[index] for word in plain):
                        continue
                    decoded = decode_line(lines[index])
                    if not isinstance(decoded, Stored):
                        continue
                    found = _match(decoded, words)
                    if found is None:
                        continue
                    if len(hits) == limit:
                        return hits, True
                    hits.append({"episode": episode, "index": decoded.index, "time": local_time(decoded),
                                 "author": decoded.author, **found})
            if end > 0 and budget[0] <= 0:
                return hits, True
        finally:
            os.close(fd)
    return hits, False


# --- episodes ----------------------------------------------------------------------------------

def _opening(fd: int, budget: list[int]) -> tuple[str | None, str | None]:
    """The first message's time and the start of the owner's first message, from the head."""
    head = os.pread(fd, min(HEAD, max(budget[0], 0)), 0)
    budget[0] -= len(head)
    first_time, opening = None, None
    for line in head.split(b"\n")[:-1]:      # the last piece is cut by the read, or empty
        decoded = decode_line(line) if line.strip() else None
        if not isinstance(decoded, Stored):
            continue
        first_time = first_time or local_time(decoded)
        if decoded.author == "owner":
            text = decoded.text or (decoded.voice.transcript if decoded.voice and decoded.voice.transcript else "")
            if not text and decoded.files:
                text = "[" + ", ".join(entry.name for entry in decoded.files) + "]"
            opening = _cut(text, OPENING_CHARS)[0]
            break
    return first_time, opening


def _closing(fd: int, budget: list[int]) -> tuple[Stored | None, bool]:
    """The last message, and whether `/new` ended the episode."""
    ended = False
    for lines in reverse_blocks(fd, complete_end(fd, os.fstat(fd).st_size), HEAD, budget):
        for line in reversed(lines):
            decoded = decode_line(line)
            if isinstance(decoded, EndMarker):
                ended = True
            elif isinstance(decoded, Stored):
                return decoded, ended
    return None, ended


def episodes(log: Log, before: date | None, after: date | None, limit: int,
             budget: list[int]) -> tuple[list[dict[str, Any]], bool]:
    listed: list[dict[str, Any]] = []
    for episode in log.episodes():
        started = episode_start(episode).date()
        if (before is not None and started >= before) or (after is not None and started < after):
            continue
        if len(listed) == limit or budget[0] <= 0:
            return listed, True
        fd = log.open(episode)
        if fd is None:
            continue
        try:
            first_time, opening = _opening(fd, budget)
            last, ended = _closing(fd, budget)
        finally:
            os.close(fd)
        if last is None:
            continue
        listed.append({"episode": episode, "first": first_time, "last": local_time(last), "messages": last.index + 1,
                       "opening": opening, "ended_by_new": ended})
    return listed, False


# --- read ----------------------------------------------------------------------------------------

def read(log: Log, episode: str, offset: int, limit: int, files: Files) -> dict[str, Any] | None:
    """Messages `offset` to `offset + limit` of an episode, with the total; None: no such episode."""
    fd = log.open(episode)
    if fd is None:
        return None
    messages, total, ended, carry, at = [], 0, False, b"", 0
    try:
        end = complete_end(fd, os.fstat(fd).st_size)
        while at < end:
            data = carry + os.pread(fd, min(BLOCK, end - at), at)
            at += len(data) - len(carry)
            lines = data.split(b"\n")
            carry = lines.pop()
            for line in lines:
                if not line.strip():
                    continue
                message = decode_line(line)
                if not isinstance(message, Stored):
                    ended = ended or isinstance(message, EndMarker)
                    continue
                if offset <= total < offset + limit:
                    messages.append(show_message(message, files))
                total += 1
    finally:
        os.close(fd)
    return {"episode": episode, "offset": offset, "total": total, "messages": messages, "ended_by_new": ended}
