"""Stop signals turned into a call: the one way SCV's commands and servers learn of SIGINT and
SIGTERM.

`on_stop_signals(callback)` calls `callback(signum)` for each SIGINT or SIGTERM while its block
runs, and puts back the handlers that were there when it leaves, so a command that runs twice in
one process (the tests, a server's session) never keeps a handler that points at a finished run.
The callback runs in the main thread between two bytecodes: it only records, sets a flag or rings
a `Cancellation` (a byte in a pipe), never waits.
"""

import contextlib
import signal
from collections.abc import Callable, Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def on_stop_signals(callback: Callable[[int], object],
                    signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    previous = {sig: signal.signal(sig, lambda signum, frame: callback(signum)) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
