"""A model endpoint's HTTP/1.1 answer read from its socket: the status line, the headers, and the
body as its framing says (chunked, Content-Length, or up to the close).

SCV reads its own answers instead of http.client's `HTTPResponse` so that no module beyond
`io` is loaded between a request going out and its answer being read: http.client brings the
email package and ssl (about 20 ms here), which on the first turn of `scv exec` would be paid
while the answer waits. The reader is bounded like http.client (65,536 bytes a line, 100
headers) and anything that breaks HTTP's framing is a `BrokenAnswer`, an OSError like a reset
connection, so a caller handles both the same way.
"""

import socket

MAX_LINE = 65536
MAX_HEADERS = 100


class BrokenAnswer(OSError):
    """The answer does not follow HTTP/1.1's framing; the text says where."""


class Headers(dict):
    """Header values by name, whatever the case the name is asked in (stored lower-case)."""

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)


class Answer:
    """One answer; `read1`/`read` give its body, `will_close` says the server closes afterwards."""

    def __init__(self, sock: socket.socket, method: str = "POST"):
        self._fp = sock.makefile("rb")
        self.status, self.reason, self.version = self._status_line()
        while 100 <= self.status < 200 and self.status != 101:      # interim answers (103 Early Hints)
            self._headers()
            self.status, self.reason, self.version = self._status_line()
        self.headers = self._headers()
        self.will_close = self.version == "HTTP/1.0" or "close" in self.headers.get("connection", "").lower()
        self._chunked = False
        self._left: int | None = None            # body bytes (or bytes of the current chunk) still to read
        self._done = False
        if method in ("HEAD", "CONNECT") and 200 <= self.status < 300 or self.status in (204, 304):
            self._done = True
        elif "chunked" in self.headers.get("transfer-encoding", "").lower():
            self._chunked = True
            self._left = 0
        elif "content-length" in self.headers:
            length = self.headers["content-length"].strip()
            if not length.isdigit():
                raise BrokenAnswer(f"Content-Length is not a number: {length[:40]!r}")
            self._left = int(length)
            self._done = self._left == 0
        else:
            self.will_close = True              # the body ends where the connection does
        if self._done:
            self._finish()

    def _line(self) -> bytes:
        line = self._fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BrokenAnswer("a line over 65536 bytes")
        return line

    def _status_line(self) -> tuple[int, str, str]:
        line = self._line()
        if not line:
            raise ConnectionResetError("the server closed the connection before answering")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise BrokenAnswer(f"not an HTTP/1.1 status line: {line[:40]!r}")
        return int(code), reason.strip(), version

    def _headers(self) -> Headers:
        found = Headers()
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return found
            if line[:1] in (b" ", b"\t") and found:          # obsolete folding: the last header goes on
                key = next(reversed(found))
                found[key] = f"{found[key]} {line.decode('latin-1').strip()}"
                continue
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon or not name.strip() or name != name.strip():
                raise BrokenAnswer(f"a header line without a name: {line[:40]!r}")
            key, value = name.lower(), value.strip()
            found[key] = f"{found[key]}, {value}" if key in found else value
        raise BrokenAnswer("more than 100 header lines")

    def _next_chunk(self) -> None:
        """Reads the next chunk's size line; a last (zero) chunk reads the trailers and ends."""
        size = self._line().split(b";", 1)[0].strip()
        try:
            self._left = int(size, 16)
        except ValueError:
            raise BrokenAnswer(f"a chunk size that is not hexadecimal: {size[:20]!r}") from None
        if self._left < 0:
            raise BrokenAnswer("a negative chunk size")
        if self._left == 0:
            self._headers()
            self._finish()

    def read1(self, size: int = 65536) -> bytes:
        """At most `size` body bytes, with at most one read of the socket; b"" once the body ended."""
        if self._done:
            return b""
        if self._chunked and self._left == 0:
            self._next_chunk()
            if self._done:
                return b""
        want = size if self._left is None else min(size, self._left)
        data = self._fp.read1(want)
        if not data:
            if self._left is None:              # close-delimited: the close is the end
                self._finish()
                return b""
            raise BrokenAnswer("the connection closed inside the body")
        if self._left is not None:
            self._left -= len(data)
            if self._left == 0 and self._chunked:
                if self._line() not in (b"\r\n", b"\n"):
                    raise BrokenAnswer("a chunk not followed by its line end")
            elif self._left == 0:
                self._finish()
        return data

    def read(self, size: int = -1) -> bytes:
        """The body up to `size` bytes (all of it when negative)."""
        parts, got = [], 0
        while size < 0 or got < size:
            data = self.read1(65536 if size < 0 else size - got)
            if not data:
                break
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    def _finish(self) -> None:
        self._done = True
        self._fp.close()            # the socket itself stays open for the next request

    def isclosed(self) -> bool:
        """The body was read to its end (or the answer closed)."""
        return self._done

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._fp.close()
