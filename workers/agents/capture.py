"""Bounded captures of an agent's output: the head of stdout (the plain-text reply, or the text a
structured stream falls back to), the last bytes of stderr, and text cut on a character boundary."""


class Head:
    """The first `limit` bytes of a stream, with its total size."""

    def __init__(self, limit: int):
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit + 4 - len(self.data)   # a few bytes more, to finish a cut character
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", "replace")


class Tail:
    """The last `limit` bytes of a stream."""

    def __init__(self, limit: int = 2048):
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk[-self.limit:]
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        data = bytes(self.data)
        if self.total > self.limit:
            # Skip a character cut at the start (UTF-8 continuation bytes).
            start = 0
            while start < len(data) and start < 4 and (data[start] & 0xC0) == 0x80:
                start += 1
            data = data[start:]
        return data.decode("utf-8", "replace")


def bound(text: str, limit_bytes: int) -> tuple[str, bool]:
    """`text` within `limit_bytes` of UTF-8, cut on a character boundary; whether it was cut."""
    if len(text) * 4 <= limit_bytes:
        return text, False
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit_bytes:
        return text, False
    return raw[:limit_bytes].decode("utf-8", "ignore"), True
