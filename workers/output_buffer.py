"""Bounded capture of a stream: the first half of the limit and the last half, with a count.

A command that prints gigabytes costs at most `limit` bytes (plus one read chunk) of memory.
"""


class HeadTail:
    def __init__(self, limit: int):
        self.limit = limit
        self._head_size = limit // 2
        self._tail_size = limit - self._head_size
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes | memoryview) -> None:
        """Keeps what it needs of the chunk (copied), so the caller may reuse its buffer."""
        self.total += len(chunk)
        room = self._head_size - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
            if not chunk:
                return
        if len(chunk) >= self._tail_size:
            self.tail[:] = chunk[-self._tail_size:]
            return
        self.tail += chunk
        if len(self.tail) > 2 * self._tail_size:
            del self.tail[: len(self.tail) - self._tail_size]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        """The kept bytes as text; a cut is marked with how much was left out."""
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        tail = bytes(self.tail[-self._tail_size:])
        omitted = self.total - len(self.head) - len(tail)
        head_text = bytes(self.head).decode("utf-8", "replace")
        tail_text = tail.decode("utf-8", "replace")
        return f"{head_text}\n[... {omitted} bytes of output omitted ...]\n{tail_text}"
