"""Reading one conversation's chat log (the format of `scv.core.chat.archive`): search, the list of
episodes, and an episode's messages. Every read is bounded: `budget` is the bytes of log a
call may still read, and files are read a block at a time, so memory does not grow with the log.
Episode files are opened beneath the conversation folder through no symbolic link.
"""

import os
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterator

from scv.core.chat.archive import (TAIL_CHUNK, EndMarker, FileEntry, Stored, complete_end, decode_line, iter_episodes,
                                   read_kept, reverse_blocks)
from scv.core.chat.layout import episode_parts, episode_start
from scv.core.safe_open import open_exact

BLOCK = 1024 * 1024
HEAD = 64 * 1024
MESSAGE_CHARS = 8000
EXCERPT_CHARS = 240
OPENING_CHARS = 200
_JSON_ESCAPED = frozenset('"\\') | frozenset(chr(c) for c in range(0x20))
# The characters whose casefold holds ASCII letters (ß -> ss, the Kelvin sign -> k, ligatures ...):
# a block where one could stand for a letter of an ASCII word is casefolded as text; any other
# block is tested as lowered bytes, which is then exact and several times faster.
CASEFOLDS_TO_ASCII = "\u00df\u0130\u0149\u017f\u01f0\u1e96\u1e97\u1e98\u1e99\u1e9a\u1e9e\u212a" \
                     "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06"
_SPECIAL_LETTERS = {c: "".join(x for x in c.casefold() if x.isascii()) for c in CASEFOLDS_TO_ASCII}


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
            self.fd: int | None = os.open(conversation_dir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            self.fd = None      # nothing recorded yet (or the folder is now a link: nothing is read)
            return
        # The folder was canonical when the session started: one that now leads elsewhere reads nothing.
        try:
            here = os.readlink(f"/proc/self/fd/{self.fd}")
        except OSError:
            here = None
        if here != conversation_dir:
            self.close()
            self.fd = None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

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


def _words(query: str) -> tuple[list[str], list[tuple[bytes, list[bytes]]], list[str]]:
    """The query's words casefolded; those a raw line can be tested for as bytes (ASCII, nothing
    JSON escapes), each with the special characters that could stand for its letters; the rest."""
    words = [word.casefold() for word in query.split()]
    fast = [(w.encode(), [c.encode() for c, letters in _SPECIAL_LETTERS.items() if set(letters) & set(w)])
            for w in words if w.isascii() and not (_JSON_ESCAPED & set(w))]
    slow = [w for w in words if not w.isascii() and not (_JSON_ESCAPED & set(w))]
    return words, fast, slow


def _any_in(needles: list[bytes], block: bytes) -> bool:
    # Their lead bytes are rare: a one-byte search (memchr) first, the needle only after a hit.
    return any(needle[:1] in block and needle in block for needle in needles)


def _candidates(block: bytes, fast: list[tuple[bytes, list[bytes]]], slow: list[str]) -> Iterator[bytes]:
    """The lines of a block that may hold every word, newest first. ASCII words are tested on the
    block's bytes lowered (fast, and exact unless a special character or a JSON escape could stand
    for a letter: then the block is casefolded as text)."""
    lowered = block.lower()
    escaped = b"\\" in block and b"\\u" in block        # memchr first: a backslash is rare
    missing = next((needles for word, needles in fast if word not in lowered), None)
    if missing is not None and not escaped and not _any_in(missing, block):
        return                  # that word is nowhere in the block, in any form
    lines = block.split(b"\n")
    if missing is None and not escaped and not slow and not any(_any_in(ns, block) for _, ns in fast):
        lowered_lines = lowered.split(b"\n")
        yield from (lines[i] for i in range(len(lines) - 1, -1, -1) if all(w in lowered_lines[i] for w, _ in fast))
        return
    folded = block.decode("utf-8", "replace").casefold()
    words = [w.decode() for w, _ in fast] + slow
    if all(w in folded for w in words):
        folded_lines = folded.split("\n")
        yield from (lines[i] for i in range(len(lines) - 1, -1, -1) if all(w in folded_lines[i] for w in words))


def search(log: Log, query: str, limit: int, budget: list[int]) -> tuple[list[dict[str, Any]], bool]:
    """Messages holding every word of `query` (ignoring case), newest first."""
    words, fast, slow = _words(query)
    hits: list[dict[str, Any]] = []
    for episode in log.episodes():
        if budget[0] <= 0:
            return hits, True
        fd = log.open(episode)
        if fd is None:
            continue
        try:
            end = complete_end(fd, os.fstat(fd).st_size)
            for block in reverse_blocks(fd, end, BLOCK, budget):
                for line in _candidates(block, fast, slow):
                    decoded = decode_line(line)
                    found = _match(decoded, words) if isinstance(decoded, Stored) else None
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
    for block in reverse_blocks(fd, complete_end(fd, os.fstat(fd).st_size), TAIL_CHUNK, budget, grow=True):
        for line in reversed(block.split(b"\n")):
            decoded = decode_line(line) if line.strip() else None
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
