"""Processes of a delegated run: who is alive (PID *and* start time), which processes carry a
run's link in `SCV_PARENT`, and stopping them with the one kill policy (scv/core/stopping.py).

A process is the one a record names only if its start time matches too, so a PID that was
reused by an unrelated process is never signalled. Tagged processes are found through their
environment, which children inherit, so descendants that left the group with `setsid` are
found as well. Shared by the supervisor and the workers: standard library only.
"""

from scv.core import oscalls, stopping
from scv.core.oscalls import REAL, ProcessOps

START_TOLERANCE = 0.05      # start times come from clock ticks: the same process reads the same


def start_time(pid: int) -> float | None:
    return oscalls.start_time(pid)


def alive(pid: int | None, started: float | None) -> bool:
    """True only for a running (not zombie) process with this PID that started at `started`."""
    if not pid or pid <= 0 or started is None:
        return False
    now_started = oscalls.start_time(pid)
    if now_started is None or abs(now_started - started) > START_TOLERANCE:
        return False
    return oscalls.is_running(pid)


def tagged(link: str, ops: ProcessOps = REAL) -> list[int]:
    """Live processes whose SCV_PARENT chain holds `link` (this process excluded)."""
    return ops.in_chain(link)


def stop_run(pid: int | None, pid_start: float | None, link: str, ops: ProcessOps = REAL) -> int:
    """Stops a run: the agent's process group (only if the agent is still the process the record
    names), then every process tagged with its link; TERM, then KILL after 2 s. Returns how many
    processes were signalled."""
    group = pid if alive(pid, pid_start) else None
    first = ops.in_chain(link)
    if group is None and not first:
        return 0
    # RUNNING -> STOPPING: the group and every tagged process, KILL for what outlives the grace.
    stopping.stop(ops, group=group, find=lambda: ops.in_chain(link), immediate=False)
    return len(set(first) | ({group} if group else set()))
