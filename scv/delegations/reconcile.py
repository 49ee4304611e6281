"""The orphan reconcile, run when `scv exec`, `scv server --stdio` and `scv batch` start, and by
`scv agents kill --orphans`.

A record whose owning SCV process is gone (matched by PID and start time) is an orphan: its
agent's group and every process tagged with its link are stopped and the record removed. A
conversation marker whose owning SCV process is gone is removed too. The number of orphans
stopped is kept in `state/orphans-stopped.json` for `scv status`.
"""

import contextlib
import fcntl
import os
from pathlib import Path

import msgspec

from scv.core import files
from scv.core.delegations import processes, records
from scv.core.delegations.records import Record

COUNTER = "orphans-stopped.json"


class Reconciled(msgspec.Struct):
    orphans: list[str]          # handles stopped and removed
    markers: list[str]          # conversation markers removed


def owner_alive(record: Record) -> bool:
    return processes.alive(record.owner_pid, record.owner_start)


def run_gone(record: Record) -> bool:
    """The agent process is gone and no process carries the run's link any more."""
    return not processes.alive(record.pid, record.pid_start) and not processes.tagged(record.link)


def stop_and_remove(home: Path, record: Record) -> int:
    signalled = processes.stop_run(record.pid, record.pid_start, record.link)
    records.remove(home, record.handle)
    return signalled


def markers_folder(home: Path) -> Path:
    return home / "state" / "conversations"


def marker_owner_alive(data: bytes) -> bool:
    """A marker names the SCV process that keeps the conversation: `pid`, and `start` when the
    writer recorded it (without it, a live PID counts, which errs on keeping)."""
    try:
        body = msgspec.json.decode(data)
        pid = int(body["pid"])
    except (ValueError, KeyError, TypeError):
        return False
    start = body.get("start")
    if isinstance(start, (int, float)):
        return processes.alive(pid, float(start))
    return processes.start_time(pid) is not None


def _markers(home: Path):
    """(name, owner alive) for each conversation marker; symlinks and odd names are skipped."""
    folder = markers_folder(home)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(".") or not records.HANDLE.fullmatch(name):
            continue
        data = records.read_regular(folder / name, 4096)
        if data is not None:
            yield name, marker_owner_alive(data)


def live_marker_ids(home: Path) -> set[str]:
    """CLI session ids named by markers whose owner still runs (their transcripts are kept)."""
    return {name for name, alive in _markers(home) if alive}


def remove_dead_markers(home: Path) -> list[str]:
    removed = []
    for name, alive in list(_markers(home)):
        if alive:
            continue
        try:
            os.unlink(markers_folder(home) / name)
            removed.append(name)
        except FileNotFoundError:
            pass
    return removed


def _count_stopped(home: Path, more: int) -> None:
    # Under the reconcile lock: no other pass adds to the count meanwhile.
    total = stopped_so_far(home) + more
    files.write_atomic(home / "state" / COUNTER, msgspec.json.encode({"stopped": total}))


def stopped_so_far(home: Path) -> int:
    data = records.read_regular(home / "state" / COUNTER, 4096)
    try:
        return int(msgspec.json.decode(data)["stopped"]) if data else 0
    except (ValueError, KeyError, TypeError):
        return 0


@contextlib.contextmanager
def _exclusive(home: Path, name: str):
    """One SCV process at a time (several may start together): a lock file under state/."""
    files.ensure_folder(home / "state")
    fd = os.open(home / "state" / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def reconcile(home: Path) -> Reconciled:
    """One pass: orphans stopped and removed, dead owners' conversation markers removed."""
    with _exclusive(home, ".reconcile.lock"):
        return _reconcile(home)


def _reconcile(home: Path) -> Reconciled:
    orphans = []
    for record in records.all_records(home):
        if owner_alive(record):
            if run_gone(record):
                # The run was abandoned (its worker killed) and nothing of it is left: a stale record.
                records.remove(home, record.handle)
            continue
        stop_and_remove(home, record)
        orphans.append(record.handle)
    if orphans:
        _count_stopped(home, len(orphans))
    for handle in records.stale_stop_marks(home):
        records.take_stop_mark(home, handle)
    return Reconciled(orphans=orphans, markers=remove_dead_markers(home))
