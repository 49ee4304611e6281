"""Newline-delimited messages from a descriptor, and a wait that a stop descriptor can end.

`LineReader.next` blocks in `select` on the input and on a stop descriptor together, so a stop
(SIGINT, SIGTERM, or another thread that found the client gone) ends the wait at once however
long the input stays silent: the stop is a byte in a pipe, which no timing can lose, unlike a
signal sent to interrupt a blocking read.
"""

import os
import select

READ_BYTES = 1 << 16
TOO_LONG = object()     # a line over the limit, skipped to its end


class LineReader:
    def __init__(self, fd: int, stop_fd: int, limit: int):
        self._fd = fd
        self._stop_fd = stop_fd
        self._limit = limit
        self._buffer = bytearray()
        self._skipping = False
        self._eof = False

    def next(self) -> bytes | object | None:
        """The next line (with its newline), TOO_LONG for one over the limit, or None at EOF or
        once the stop descriptor is readable."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end + 1])
                del self._buffer[:end + 1]
                if self._skipping:
                    self._skipping = False
                    continue
                if len(line) > self._limit + 1:
                    return TOO_LONG
                return line
            if len(self._buffer) > self._limit:
                # The rest of an over-long line is dropped as it arrives, never held.
                self._buffer.clear()
                if not self._skipping:
                    self._skipping = True
                    return TOO_LONG
            if self._eof:
                line, self._skipping = bytes(self._buffer), False
                self._buffer.clear()
                return line or None
            ready, _, _ = select.select([self._fd, self._stop_fd], [], [])
            if self._stop_fd in ready:
                return None
            chunk = os.read(self._fd, READ_BYTES)
            if not chunk:
                self._eof = True
            self._buffer += chunk
