"""Like tests/slow_import.py, but the 20 s wait runs inside a weakref callback, where Python drops
whatever a signal handler raises instead of ending the import: a closing supervisor's SIGUSR1 lands
there. Its folder comes from SCV_SLOW_IMPORT_DIR: `started` when the wait begins, `finished` if
the import ends."""

import os
import time
import weakref
from pathlib import Path

_folder = Path(os.environ["SCV_SLOW_IMPORT_DIR"])


class _Held:
    pass


def _wait(_ref) -> None:
    (_folder / "starting").write_text(str(os.getpid()))
    os.replace(_folder / "starting", _folder / "started")       # whole when it appears
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(0.05)            # a signal's Python handler runs between these


_held = _Held()
_ref = weakref.ref(_held, _wait)
del _held                           # the callback runs here
(_folder / "finished").write_text("the import ran to its end")
