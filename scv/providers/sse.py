"""Server-sent events: an incremental decoder fed arbitrary chunks of the response body.

Follows the event-stream rules: lines end in CRLF, LF or CR (a CR at the end of one chunk
may be followed by the LF of the next); `data:` lines accumulate, joined by LF; a blank line
dispatches the event; lines starting with `:` are comments; one space after the colon is
dropped. An event or line over `max_event_bytes` is an error rather than unbounded memory.
"""

import msgspec

MAX_EVENT_BYTES = 16 * 1024 * 1024


class SSEError(ValueError):
    pass


class SSEEvent(msgspec.Struct, frozen=True):
    event: str          # "message" unless the stream named it
    data: str


class SSEDecoder:
    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES):
        self._max = max_event_bytes
        self._line = bytearray()
        self._skip_lf = False           # the previous chunk ended in CR
        self._event = ""
        self._data: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if not chunk:
            return events
        start = 0
        if self._skip_lf and chunk[:1] == b"\n":
            start = 1
        self._skip_lf = False
        n = len(chunk)
        while start < n:
            cr = chunk.find(b"\r", start)
            lf = chunk.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                self._append(chunk[start:])
                break
            end = min(ends)
            self._append(chunk[start:end])
            line = bytes(self._line)
            self._line.clear()
            if chunk[end:end + 1] == b"\r":
                if end + 1 < n:
                    start = end + 2 if chunk[end + 1:end + 2] == b"\n" else end + 1
                else:
                    self._skip_lf = True
                    start = n
            else:
                start = end + 1
            event = self._line_done(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        """End of the body: a final line without its newline still counts; an event that was
        never terminated by a blank line is dropped, as the rules say."""
        events = []
        if self._line:
            line = bytes(self._line)
            self._line.clear()
            event = self._line_done(line)
            if event is not None:
                events.append(event)
        return events

    def _append(self, part: bytes) -> None:
        self._line += part
        if len(self._line) + self._size > self._max:
            raise SSEError(f"an event of the stream is over {self._max} bytes")

    def _line_done(self, raw: bytes) -> SSEEvent | None:
        line = raw.decode("utf-8", "replace")
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent(event=self._event or "message", data="\n".join(self._data))
            self._event, self._data, self._size = "", [], 0
            return event
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._size += len(raw) + 1
        elif field == "event":
            self._event = value
        return None
