"""Splits a byte stream into lines as it arrives, skipping lines over a limit without holding them.

Memory is bounded by the limit plus one read chunk, whatever the stream's size: an over-long
line is dropped as soon as it passes the limit and the rest of it is discarded up to its newline.
"""

from typing import Callable

MAX_LINE_BYTES = 4 << 20


class LineSplitter:
    def __init__(self, on_line: Callable[[bytes], None], limit: int = MAX_LINE_BYTES):
        self.on_line = on_line
        self.limit = limit
        self.skipped = 0
        self._partial = bytearray()
        self._skipping = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            elif self._partial:
                self._partial += chunk[start:end]
                line, self._partial = self._partial, bytearray()
                self._emit(line)
            else:
                self._emit(chunk[start:end])
            start = end + 1
        if start < len(chunk) and not self._skipping:
            self._partial += chunk[start:]
            if len(self._partial) > self.limit:
                self._partial = bytearray()
                self._skipping = True
                self.skipped += 1

    def _emit(self, line) -> None:
        if len(line) > self.limit:
            self.skipped += 1
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():
            self.on_line(bytes(line))

    def close(self) -> None:
        """The stream ended: a last line without a newline still counts."""
        if self._partial and not self._skipping:
            line, self._partial = self._partial, bytearray()
            self._emit(line)
        self._skipping = False
