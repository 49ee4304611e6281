"""Preloaded before tests.preload_blocker: writes $SCV_TEST_PRELOAD_STARTED, then waits until
$SCV_TEST_PRELOAD_GO exists (at most 60 s)."""

import os
import time

open(os.environ["SCV_TEST_PRELOAD_STARTED"], "w").close()
_deadline = time.monotonic() + 60
while not os.path.exists(os.environ["SCV_TEST_PRELOAD_GO"]) and time.monotonic() < _deadline:
    time.sleep(0.01)
