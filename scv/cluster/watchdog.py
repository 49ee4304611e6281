"""`python -m scv.cluster.watchdog [FOLDER]`: stops a private Ray's leftovers when the batch that started it
ends, however it ends. The driver writes `PID START` lines on this process's stdin as it learns
of Ray processes (its own private GCS, raylet, and the dashboard and runtime-env agents the
raylet starts, which outlive it); end of input (the driver finished, or was killed) stops the
listed ones that still run, matched by start time, by pid, then removes the private Ray's
temporary FOLDER. Runs in a session of its own, so a
Ctrl-C meant for the batch does not reach it."""

import shutil
import signal
import sys

from scv.cluster.processes import RAY_GRACE_SECONDS, START_TOLERANCE
from scv.core import oscalls, stopping


def _alive(known: dict[int, float]) -> list[int]:
    left = []
    for pid, start in known.items():
        now = oscalls.start_time(pid)
        if now is not None and abs(now - start) <= START_TOLERANCE and oscalls.is_running(pid):
            left.append(pid)
    return left


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    known: dict[int, float] = {}
    for line in sys.stdin.buffer:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            try:
                known[int(parts[0])] = float(parts[1])
            except ValueError:
                continue
    # The driver is done with them: RUNNING -> STOPPING for whatever it left
    if _alive(known):
        stopping.stop(oscalls.REAL, group=None, find=lambda: _alive(known), immediate=False, grace=RAY_GRACE_SECONDS)
    if len(sys.argv) > 1 and "scv-ray-" in sys.argv[1]:
        shutil.rmtree(sys.argv[1], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
