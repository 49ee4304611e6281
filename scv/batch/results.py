"""The batch output: one JSON line per task, written as each finishes, each line by one write to
a file opened for appending, so an interrupted run leaves only whole lines.

Resuming with the same output file keeps the lines of tasks that completed and skips those
tasks; the lines of tasks that did not complete (failed, cancelled, or cut short by a crash
mid-line) are dropped before the run starts, so each task has exactly one line at the end.
"""

import os
import threading
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from scv.core.errors import UsageError
from scv.core.files import write_atomic

COMPLETED = "completed"
# Every status a result line can end with but completed: the agent tool's, the batch's own.
RERUNNABLE = frozenset({"failed", "declined", "timeout", "cancelled", "lost", "quota", "limit", "schema_invalid"})

_encoder = msgspec.json.Encoder()


def parse_rerun(text: str | None) -> frozenset[str] | None:
    """`--rerun failed,timeout`: the statuses a resume runs again (None: every one but completed)."""
    if text is None:
        return None
    statuses = frozenset(part.strip() for part in text.split(",") if part.strip())
    if not statuses or COMPLETED in statuses:
        raise UsageError(f"--rerun {text!r} must name statuses other than completed, such as failed,timeout,lost")
    unknown = sorted(statuses - RERUNNABLE)
    if unknown:
        raise UsageError(f"--rerun names {', '.join(unknown)}, which no result line has; name some of "
                         f"{', '.join(sorted(RERUNNABLE))}")
    return statuses


def completed_lines(path: Path, rerun: frozenset[str] | None = None) -> dict[str, bytes]:
    """Task id -> its result line, for the tasks an earlier run completed (and, with `rerun`,
    the tasks whose status is not one to run again)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise UsageError(f"the output file {path} cannot be read ({err.strerror}); pass another --output") from None
    kept: dict[str, bytes] = {}
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:
            if number == len(lines):
                continue        # a line cut short by a crash: that task runs again
            raise UsageError(f"the output file {path} line {number} is not a batch result; pass another --output or "
                             "remove the file") from None
        if not isinstance(value, dict) or not isinstance(value.get("id"), str):
            raise UsageError(f"the output file {path} line {number} is not a batch result; pass another --output or "
                             "remove the file")
        if value.get("status") == COMPLETED or (rerun is not None and value.get("status") not in rerun):
            kept[value["id"]] = line
    return kept


def recorded_bases(path: Path | None) -> dict[str, str]:
    """Repository -> the `base` an earlier run with this output used (isolated tasks), so a
    resume starts its worktrees where the first run did."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return {}
    bases: dict[str, str] = {}
    for line in data.split(b"\n"):
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("repository"), str) and isinstance(value.get("base"), str):
            bases.setdefault(value["repository"], value["base"])
    return bases


class ResultSink:
    """Writes result lines to the output file (or stdout), one whole line per write."""

    def __init__(self, path: Path | None, stdout: BinaryIO):
        self._lock = threading.Lock()
        self._stdout = stdout
        self._fd: int | None = None
        self.path = path
        self.written: list[dict[str, Any]] = []     # every result of the output, for --report

    def open(self, kept: dict[str, bytes]) -> None:
        """Rewrites the output file to hold only the completed tasks' lines, then appends to it."""
        self.written = [msgspec.json.decode(line) for line in kept.values()]
        if self.path is None:
            return
        data = b"".join(line + b"\n" for line in kept.values())
        try:
            write_atomic(self.path, data, private_folder=False)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as err:
            raise UsageError(f"the output file {self.path} cannot be written ({err.strerror}); pass another "
                             "--output") from None

    def write(self, result: dict[str, Any]) -> None:
        line = _encoder.encode(result) + b"\n"
        with self._lock:
            self.written.append(result)
            if self._fd is None:
                self._stdout.write(line)
                self._stdout.flush()
                return
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
