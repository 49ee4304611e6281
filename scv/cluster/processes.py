"""The Ray processes of this machine's node, started and stopped by SCV alone, by pid.

`ray start` runs in a session of its own, so every daemon it leaves (GCS, raylet, monitors, and
the dashboard and runtime-env agents the raylet starts, which outlive a killed raylet and
rewrite their /proc/PID/environ, so no environment marker finds them) belongs to that session.
They are recorded with their start times when the node starts; stopping takes the recorded
ones that still match and the session's members. A task's runner (`scv batch --run-one`) starts
a session of its own, so it is never taken for a Ray process: it is cancelled first, and tears
its own tree down. Nothing here ever signals a process by name."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from scv.cluster.settings import ClusterError
from scv.core import oscalls, stopping
from scv.core.delegations.records import read_regular
from scv.core.files import write_atomic
from scv.core.stopping import SETTLE_SECONDS

START_TOLERANCE = 0.05
RAY_GRACE_SECONDS = 5.0         # gcs_server takes its time over SIGTERM; then KILL
START_TIMEOUT_SECONDS = 180.0


class RayProcess(msgspec.Struct):
    pid: int
    start: float
    name: str = ""


class NodeRecord(msgspec.Struct, kw_only=True):
    role: str                   # "head" or "node"
    address: str                # the head's HOST:PORT
    session: int                # the session `ray start` ran in
    started_unix: float
    temp_dir: str
    token_file: str
    node_id: str | None = None
    node_ip: str | None = None
    workspace: str | None = None
    slots: dict[str, int] = {}
    processes: list[RayProcess] = []


_decoder = msgspec.json.Decoder(NodeRecord)


def read_record_at(path: Path) -> NodeRecord | None:
    data = read_regular(path)
    if not data:
        return None
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError:
        return None


def write_record_at(path: Path, record: NodeRecord) -> None:
    write_atomic(path, msgspec.json.encode(record))


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return ""
    words = [os.path.basename(a.decode(errors="replace")) for a in argv[:3] if a]
    return " ".join(words)[:120]


def session_members(session: int, since: float | None = None) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if oscalls.session_of(pid) != session or not oscalls.is_running(pid):
            continue
        started = oscalls.start_time(pid)
        if since is not None and (started is None or started < since - 1.0):
            continue
        found.append(pid)
    return found


def snapshot(session: int, since: float) -> list[RayProcess]:
    return [RayProcess(pid, oscalls.start_time(pid) or 0.0, _name(pid)) for pid in session_members(session, since)]


def _matches(process: RayProcess) -> bool:
    started = oscalls.start_time(process.pid)
    return (started is not None and abs(started - process.start) <= START_TOLERANCE
            and oscalls.is_running(process.pid))


def live(record: NodeRecord) -> list[int]:
    """The node's Ray processes still running. The session counts only while a recorded process
    lives: then no other session can have its id (the kernel does not reuse a live session's)."""
    recorded = [p.pid for p in record.processes if _matches(p)]
    if not recorded:
        return []
    return sorted(set(recorded) | set(session_members(record.session, record.started_unix)))


def runners(record: NodeRecord, ray_pids: list[int]) -> list[int]:
    """Children of the node's Ray processes in a session of their own: the tasks' runners."""
    found = []
    for pid in ray_pids:
        for child in oscalls.REAL.children(pid):
            if oscalls.session_of(child) != record.session and oscalls.is_running(child):
                found.append(child)
    return found


def start_ray(args: list[str], env: dict[str, str], log_path: Path) -> tuple[int, int]:
    """Runs `ray start ARGS` in a new session; returns (exit status, session id)."""
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        os.fchmod(log.fileno(), 0o600)
        proc = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", *args], env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=str(log_path.parent))
        try:
            code = proc.wait(START_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            stop_session(proc.pid, time.time() - START_TIMEOUT_SECONDS - 5)
            proc.wait(10)
            raise ClusterError(f"ray start did not finish within {START_TIMEOUT_SECONDS:.0f} s; everything it started "
                               f"was stopped (its output is in {log_path})") from None
    return code, proc.pid


def stop_session(session: int, since: float) -> int:
    """Stops what a failed start left in its session."""
    left = session_members(session, since)
    if left:
        stopping.stop(oscalls.REAL, group=None, find=lambda: session_members(session, since), immediate=False,
                      grace=RAY_GRACE_SECONDS)
    return len(left)


def tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(line for line in text.splitlines()[-lines:])


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if oscalls.is_running(pid)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(stopping.POLL_SECONDS)


def stop_node(record: NodeRecord) -> tuple[int, int]:
    """Cancels the node's running tasks (each runner tears its tree down), then stops its Ray
    processes: TERM, then KILL after the grace. Returns (tasks cancelled, Ray processes stopped)."""
    ray_pids = live(record)
    tasks = runners(record, ray_pids)
    for pid in tasks:
        # RUNNING -> CANCELLING: the runner stops its agent and reports the task cancelled
        oscalls.REAL.signal(pid, signal.SIGTERM)
    for pid in _wait_gone(tasks, SETTLE_SECONDS):
        oscalls.REAL.signal(pid, signal.SIGKILL)       # what is below it cleans up when it dies
    ray_pids = live(record)
    if ray_pids:
        stopping.stop(oscalls.REAL, group=None, find=lambda: live(record), immediate=False, grace=RAY_GRACE_SECONDS)
    return len(tasks), len(ray_pids)
