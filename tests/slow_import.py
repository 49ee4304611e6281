"""A module whose import takes 20 s unless a signal handler raises inside it: a fork point's
preload that a closing supervisor must not wait for (tests/test_supervisor.py). Its folder
comes from SCV_SLOW_IMPORT_DIR: `started` is written when the import begins, `finished` if it ends."""

import os
import time
from pathlib import Path

_folder = Path(os.environ["SCV_SLOW_IMPORT_DIR"])
(_folder / "starting").write_text(str(os.getpid()))
os.replace(_folder / "starting", _folder / "started")       # whole when it appears
_deadline = time.monotonic() + 20
while time.monotonic() < _deadline:
    time.sleep(0.05)            # a signal's Python handler runs between these
(_folder / "finished").write_text("the import ran to its end")
