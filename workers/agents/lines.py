"""Splits a byte stream into runs of complete lines as it arrives, skipping lines over a limit
without holding them.

Memory is bounded by the limit plus one read chunk, whatever the stream's size: an over-long
line is dropped as soon as it passes the limit and the rest of it is discarded up to its newline.
Complete lines are handed on in runs (one call per chunk, not per line), so a parser can decode
a run in one step; each line in a run is at most `limit` bytes.
"""

from typing import Callable

MAX_LINE_BYTES = 4 << 20


class LineSplitter:
    def __init__(self, on_lines: Callable[[bytes], None], limit: int = MAX_LINE_BYTES):
        self.on_lines = on_lines
        self.limit = limit
        self.skipped = 0
        self._partial = bytearray()
        self._skipping = False

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
            self.skipped += 1

    def _run(self, run: bytes) -> None:
        if len(run) > self.limit:
            lines = run.split(b"\n")
            kept = [line for line in lines if len(line) <= self.limit]
            self.skipped += len(lines) - len(kept)
            run = b"\n".join(kept)
        if run.strip():
            self.on_lines(run)

    def close(self) -> None:
        """The stream ended: a last line without a newline still counts."""
        if self._partial and not self._skipping:
            self._run(bytes(self._partial))
        self._partial = bytearray()
        self._skipping = False
