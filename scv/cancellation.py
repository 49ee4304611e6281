"""A cancellation signal the supervisor's call loop can wait on: `cancel()` is safe from a
signal handler or another thread; `fileno()` becomes readable once it was called."""

import os


class Cancellation:
    def __init__(self):
        self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        try:
            os.write(self._w, b"c")
        except OSError:
            pass

    def fileno(self) -> int:
        return self._r

    def close(self) -> None:
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
