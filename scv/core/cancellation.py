"""Wake-ups the supervisor side can wait on with `select`: a `Bell` rings many times, a
`Cancellation` is one that stays rung and remembers it. Ringing is safe from a signal handler
or another thread: it writes a byte to a pipe, which no timing can lose."""

import os


class Bell:
    """`ring()` makes `fileno()` readable until the waiter calls `drain()`."""

    def __init__(self):
        self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._closed = False

    def ring(self) -> None:
        if self._closed:
            return      # a closed descriptor's number may belong to another file by now
        try:
            os.write(self._w, b"r")
        except OSError:
            pass        # full: it rings already

    def fileno(self) -> int:
        return self._r

    def drain(self) -> None:
        try:
            while os.read(self._r, 4096):
                pass
        except OSError:
            pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


class Cancellation(Bell):
    """Rung once for good: `cancel()`, then `cancelled` is true and `fileno()` stays readable."""

    def __init__(self):
        super().__init__()
        self.cancelled = False
        self._linked: list["Cancellation"] = []

    def cancel(self) -> None:
        self.cancelled = True
        self.ring()
        for other in list(self._linked):
            other.cancel()

    def link(self, other: "Cancellation") -> None:
        """`other` is cancelled with this one (at once when this one already is), until `unlink`:
        one descriptor for a waiter that must wake for either of two reasons."""
        self._linked.append(other)
        if self.cancelled:
            other.cancel()

    def unlink(self, other: "Cancellation") -> None:
        try:
            self._linked.remove(other)
        except ValueError:
            pass
