"""The kill policy, as one replaceable function.

Escalation: cancellation sends TERM to the process group and to every other process found
for the call (descendants that left the group with `setsid`), waits up to `grace` seconds for
all of them to go, then sends KILL to whatever is left. A deadline (`immediate`) sends KILL
at once. `find` is called again while waiting, so processes started during the grace period
are caught too.

The figures every waiter shares live here too, so a command waiting for a cancelled call and
the worker stopping it agree on how long that takes. Shared by the supervisor and the workers.
"""

import signal
from typing import Callable

from scv.core.oscalls import ProcessOps

GRACE_SECONDS = 2.0
POLL_SECONDS = 0.02
# A cancelled call's worker: TERM to its processes, the grace, KILL, and a bounded drain. The
# supervisor kills a worker that has not ended this long after it was told to cancel.
CANCEL_BOUND_SECONDS = 6.0
# How long a command (scv exec, the stdio server, batch, a closing session's jobs) waits for a
# cancelled call to end: the cancel bound plus the supervisor's own kill and report.
SETTLE_SECONDS = CANCEL_BOUND_SECONDS + 4.0


def stop(ops: ProcessOps, *, group: int | None, find: Callable[[], list[int]], immediate: bool,
         grace: float = GRACE_SECONDS, reap: Callable[[], object] | None = None,
         pause: Callable[[float], object] | None = None) -> list[int]:
    """Stops a call's processes; returns the pids that needed KILL. `pause` waits between
    checks (by default `ops.sleep`); a parent that can wait on its children's exits instead
    returns as soon as the last one goes."""
    first = signal.SIGKILL if immediate else signal.SIGTERM
    signalled: set[int] = set()

    def send_first(pids: list[int]) -> None:
        for pid in pids:
            if pid not in signalled:
                signalled.add(pid)
                ops.signal(pid, first)

    if group is not None:
        ops.signal_group(group, first)
    send_first(find())
    if immediate:
        # KILL cannot be ignored; one more pass catches anything forked in between.
        for pid in find():
            ops.signal(pid, signal.SIGKILL)
        if reap:
            reap()
        return []
    deadline = ops.monotonic() + grace
    while True:
        if reap:
            reap()
        left = find()
        if not left:
            return []
        send_first(left)
        if ops.monotonic() >= deadline:
            break
        (pause or ops.sleep)(POLL_SECONDS)
    if group is not None:
        ops.signal_group(group, signal.SIGKILL)
    for pid in left:
        ops.signal(pid, signal.SIGKILL)
    if reap:
        reap()
    return left
