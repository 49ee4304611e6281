"""Delegation records: `$SCV_HOME/state/delegations/<handle>.json`, one per running delegated
agent, readable by every SCV process of this `$SCV_HOME`.

A record names the agent process and the SCV process that owns it each by PID *and* start time,
so a PID the kernel has since reused never matches. Files are written atomically (a temporary
file in the same folder, flushed, renamed) with mode 0600 in 0700 folders; files that are not
regular (symlinks included) or that do not decode are skipped, never followed.
"""

import os
import re
import stat
from pathlib import Path

import msgspec

from scv.core.files import write_atomic
from scv.core.lineage import last_link

HANDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SUFFIX = ".json"
MAX_RECORD_BYTES = 64 * 1024


class Record(msgspec.Struct, kw_only=True):
    handle: str                 # such as codex-3f9a2c
    agent: str
    parent: str                 # the SCV_PARENT chain the agent carries; its last link is this run's
    session: str                # the parent SCV session
    cwd: str
    depth: int
    pid: int                    # the agent process (leader of its own process group)
    pid_start: float            # its start time (seconds since the epoch, as psutil reports it)
    owner_pid: int              # the SCV process that owns the run
    owner_start: float
    started_unix: float
    conversation: str | None = None
    turn: int | None = None
    idle_since_unix: float | None = None
    background_jobs: int | None = None

    @property
    def link(self) -> str:
        """`<instance>/<session>/<handle>`: the tag of this run in SCV_PARENT."""
        return last_link(self.parent)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)


def folder(home: Path) -> Path:
    return home / "state" / "delegations"


def check_handle(handle: str) -> str:
    if not HANDLE.fullmatch(handle):
        raise ValueError(f"{handle!r} is not a delegation handle (letters, digits, '.', '_' and '-', such as "
                         "codex-3f9a2c)")
    return handle


def write(home: Path, record: Record) -> Path:
    path = folder(home) / (check_handle(record.handle) + SUFFIX)
    write_atomic(path, _encoder.encode(record))
    return path


def remove(home: Path, handle: str) -> bool:
    try:
        os.unlink(folder(home) / (check_handle(handle) + SUFFIX))
        return True
    except FileNotFoundError:
        return False


def read_regular(path: Path, limit: int = MAX_RECORD_BYTES) -> bytes | None:
    """The bytes of a regular file, never following a symlink; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit + 1)[:limit + 1]
    except OSError:
        return None
    finally:
        os.close(fd)


def read(home: Path, handle: str) -> Record | None:
    data = read_regular(folder(home) / (check_handle(handle) + SUFFIX))
    if data is None or len(data) > MAX_RECORD_BYTES:
        return None
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError:
        return None


def all_records(home: Path) -> list[Record]:
    """Every readable record, oldest first."""
    try:
        names = os.listdir(folder(home))
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(SUFFIX) or not HANDLE.fullmatch(name[: -len(SUFFIX)]):
            continue
        record = read(home, name[: -len(SUFFIX)])
        if record is not None:
            out.append(record)
    return sorted(out, key=lambda r: r.started_unix)


STOP_SUFFIX = ".stop"


def mark_stopping(home: Path, handle: str) -> None:
    """Leaves word for the run's worker that `scv agents kill` stopped it (its status: cancelled)."""
    write_atomic(folder(home) / (check_handle(handle) + STOP_SUFFIX), b"")


def take_stop_mark(home: Path, handle: str) -> bool:
    """True (and the mark removed) when `scv agents kill` stopped this run."""
    try:
        os.unlink(folder(home) / (check_handle(handle) + STOP_SUFFIX))
        return True
    except FileNotFoundError:
        return False


def stale_stop_marks(home: Path) -> list[str]:
    """Handles with a stop mark but no record: no worker is left to read the mark."""
    try:
        names = os.listdir(folder(home))
    except OSError:
        return []
    return [name[: -len(STOP_SUFFIX)] for name in names if name.endswith(STOP_SUFFIX)
            and HANDLE.fullmatch(name[: -len(STOP_SUFFIX)])
            and not os.path.exists(folder(home) / (name[: -len(STOP_SUFFIX)] + SUFFIX))]
