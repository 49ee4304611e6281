"""A module whose import takes 20 s unless a signal handler raises inside it: a fork point's
preload that a closing supervisor must not wait for (tests/test_supervisor.py). Its folder
comes from SCV_SLOW_IMPORT_DIR: `started` is written when the wait begins, `finished` if the
import ends. With SCV_SLOW_IMPORT_IN_CALLBACK set, the wait runs inside a weakref callback, where
Python drops whatever a signal handler raises instead of ending the import."""

import os
import time
import weakref
from pathlib import Path

_folder = Path(os.environ["SCV_SLOW_IMPORT_DIR"])


def _wait(_ref=None) -> None:
    (_folder / "starting").write_text(str(os.getpid()))
    os.replace(_folder / "starting", _folder / "started")       # whole when it appears
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(0.05)            # a signal's Python handler runs between these


class _Held:
    pass


if os.environ.get("SCV_SLOW_IMPORT_IN_CALLBACK"):
    _held = _Held()
    _ref = weakref.ref(_held, _wait)
    del _held                       # the callback runs here
else:
    _wait()
(_folder / "finished").write_text("the import ran to its end")
