"""Processes of a delegated run: who is alive (PID *and* start time), which processes carry a
run's link in `SCV_PARENT`, and stopping them with the one kill policy (workers/stopping.py).

A process is the one a record names only if its start time matches too, so a PID that was
reused by an unrelated process is never signalled. Tagged processes are found through their
environment, which children inherit, so descendants that left the group with `setsid` are
found as well.
"""

import os

import psutil

from workers import stopping
from workers.oscalls import REAL, ProcessOps

PARENT_VARIABLE = b"SCV_PARENT="
CHAIN_SEPARATOR = b","
START_TOLERANCE = 0.05      # psutil derives start times from clock ticks: the same process reads the same


def start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def alive(pid: int | None, started: float | None) -> bool:
    """True only for a running (not zombie) process with this PID that started at `started`."""
    if not pid or pid <= 0 or started is None:
        return False
    try:
        process = psutil.Process(pid)
        if abs(process.create_time() - started) > START_TOLERANCE:
            return False
        return process.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ValueError):
        return False


def _chain(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read()
    except OSError:
        return []
    for item in env.split(b"\0"):
        if item.startswith(PARENT_VARIABLE):
            return item[len(PARENT_VARIABLE):].split(CHAIN_SEPARATOR)
    return []


def tagged(link: str) -> list[int]:
    """Live processes whose SCV_PARENT chain holds `link` (this process excluded)."""
    wanted = link.encode()
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        if wanted in _chain(int(entry)):
            found.append(int(entry))
    return found


def stop_run(pid: int | None, pid_start: float | None, link: str, ops: ProcessOps = REAL) -> int:
    """Stops a run: the agent's process group (only if the agent is still the process the record
    names), then every process tagged with its link; TERM, then KILL after 2 s. Returns how many
    processes were signalled."""
    group = pid if alive(pid, pid_start) else None
    first = tagged(link)
    if group is None and not first:
        return 0
    # RUNNING -> STOPPING: the group and every tagged process, KILL for what outlives the grace.
    stopping.stop(ops, group=group, find=lambda: tagged(link), immediate=False)
    return len(set(first) | ({group} if group else set()))
