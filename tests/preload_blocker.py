"""Modules for a fork point to preload that take as long as a test wants. Importing this one
waits until the file $SCV_TEST_PRELOAD_UNTIL exists (at most 60 s); tests.preload_first is the
one before it."""

import os
import time

_deadline = time.monotonic() + 60
while not os.path.exists(os.environ["SCV_TEST_PRELOAD_UNTIL"]) and time.monotonic() < _deadline:
    time.sleep(0.01)
