"""Bounded line reading: the one way SCV splits a byte stream into lines.

`LineSplitter` is fed chunks as they arrive (an agent's stdout, an ACP or JSON-RPC peer) and hands
on runs of complete lines; `LineReader` pulls lines from a descriptor, one at a time, with a stop
descriptor that ends its wait (`scv batch --run-one`'s task lines). Both skip a line over the
limit without holding it: memory is bounded by the limit plus one read chunk, whatever the stream's
size, because an over-long line is dropped as soon as it passes the limit and the rest of it is
discarded up to its newline.
"""

import collections
import os
import select
from typing import Callable

MAX_LINE_BYTES = 4 << 20
READ_BYTES = 1 << 16
TOO_LONG = object()     # LineReader's stand-in for a line over the limit


class LineSplitter:
    """Complete lines are handed on in runs (one call per chunk, not per line), so a parser can
    decode a run in one step; each line in a run is at most `limit` bytes. `on_skip`, when given,
    is called once per skipped line, in its place among the runs."""

    def __init__(self, on_lines: Callable[[bytes], None], limit: int = MAX_LINE_BYTES,
                 on_skip: Callable[[], None] | None = None):
        self.on_lines = on_lines
        self.on_skip = on_skip
        self.limit = limit
        self.skipped = 0
        self._partial = bytearray()
        self._skipping = False

    @property
    def holding(self) -> bool:
        """Whether part of a line has arrived without its end (held, or being skipped)."""
        return bool(self._partial) or self._skipping

    def feed(self, chunk: bytes) -> None:
        end = chunk.rfind(b"\n")
        if end < 0:
            self._hold(chunk)
            return
        first = chunk.find(b"\n")
        if self._skipping or self._partial:
            # The first newline ends the line held from earlier chunks.
            if not self._skipping:
                self._partial += chunk[:first]
                self._run(bytes(self._partial))
            self._partial = bytearray()
            self._skipping = False
            if first < end:
                self._run(chunk[first + 1:end])
        else:
            self._run(chunk[:end])
        self._hold(chunk[end + 1:])

    def _hold(self, data: bytes) -> None:
        if self._skipping or not data:
            return
        self._partial += data
        if len(self._partial) > self.limit:
            self._partial = bytearray()
            self._skipping = True
            self._skip()

    def _skip(self) -> None:
        self.skipped += 1
        if self.on_skip is not None:
            self.on_skip()

    def _run(self, run: bytes) -> None:
        if len(run) > self.limit:
            kept: list[bytes] = []
            for line in run.split(b"\n"):
                if len(line) <= self.limit:
                    kept.append(line)
                    continue
                if self.on_skip is not None:
                    self._emit(b"\n".join(kept))
                    kept = []
                self._skip()
            run = b"\n".join(kept)
        self._emit(run)

    def _emit(self, run: bytes) -> None:
        if run.strip():
            self.on_lines(run)

    def close(self) -> None:
        """The stream ended: a last line without a newline still counts."""
        if self._partial and not self._skipping:
            self._run(bytes(self._partial))
        self._partial = bytearray()
        self._skipping = False


class LineReader:
    """`next` blocks in `select` on the input and on a stop descriptor together, so a stop
    (SIGINT, SIGTERM, or another thread that found the client gone) ends the wait at once however
    long the input stays silent: the stop is a byte in a pipe, which no timing can lose, unlike a
    signal sent to interrupt a blocking read. Blank lines are skipped."""

    def __init__(self, fd: int, stop_fd: int, limit: int):
        self._fd = fd
        self._stop_fd = stop_fd
        self._ready: collections.deque = collections.deque()
        self._splitter = LineSplitter(self._take, limit, on_skip=lambda: self._ready.append(TOO_LONG))
        self._eof = False

    def _take(self, run: bytes) -> None:
        self._ready.extend(line for line in run.split(b"\n") if line.strip())

    def next(self) -> bytes | object | None:
        """The next line (without its newline), TOO_LONG for one over the limit, or None at EOF or
        once the stop descriptor is readable."""
        while not self._ready:
            if self._eof:
                return None
            ready, _, _ = select.select([self._fd, self._stop_fd], [], [])
            if self._stop_fd in ready:
                return None
            chunk = os.read(self._fd, READ_BYTES)
            if chunk:
                self._splitter.feed(chunk)
            else:
                self._eof = True
                self._splitter.close()
        return self._ready.popleft()
