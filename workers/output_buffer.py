"""Bounded capture of a stream: the first half of the limit and the last half, with a count.

A command that prints gigabytes costs at most `limit` bytes of memory. The tail is a fixed ring
written with plain copies, so a flood costs one memcpy per read and no allocation.
"""


class HeadTail:
    def __init__(self, limit: int):
        self.limit = limit
        self._head_size = limit // 2
        self._tail_size = limit - self._head_size
        self.head = bytearray()
        self._ring = bytearray(self._tail_size)
        self._ring_view = memoryview(self._ring)
        self._pos = 0           # where the next tail byte goes
        self._filled = 0        # how many ring bytes hold data
        self.total = 0

    def feed(self, chunk: bytes | memoryview) -> None:
        """Keeps what it needs of the chunk (copied), so the caller may reuse its buffer."""
        self.total += len(chunk)
        room = self._head_size - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        size, ring = self._tail_size, self._ring_view
        count = len(chunk)
        if count == 0 or size == 0:
            return
        if count >= size:
            ring[:] = chunk[count - size:]
            self._pos, self._filled = 0, size
            return
        first = min(count, size - self._pos)
        ring[self._pos:self._pos + first] = chunk[:first]
        if first < count:
            ring[:count - first] = chunk[first:]
        self._pos = (self._pos + count) % size
        self._filled = min(size, self._filled + count)

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def _tail(self) -> bytes:
        if self._filled < self._tail_size:
            return bytes(self._ring[:self._filled])
        return bytes(self._ring[self._pos:]) + bytes(self._ring[:self._pos])

    def text(self) -> str:
        """The kept bytes as text; a cut is marked with how much was left out."""
        head, tail = bytes(self.head), self._tail()
        if not self.truncated:
            return (head + tail).decode("utf-8", "replace")
        omitted = self.total - len(head) - len(tail)
        return (f"{head.decode('utf-8', 'replace')}\n[... {omitted} bytes of output omitted ...]\n"
                f"{tail.decode('utf-8', 'replace')}")
