"""What `scv agents ps` and `scv status` show: each record with its state, read from the records of
this `$SCV_HOME`, so any SCV process sees the runs of every other."""

import time
from pathlib import Path
from typing import Any

from scv.core.delegations import records
from scv.core.delegations.records import Record
from scv.delegations.reconcile import owner_alive, run_gone, stopped_so_far


def state_of(record: Record) -> str:
    if not owner_alive(record):
        return "orphan"
    if run_gone(record):
        return "ended"          # abandoned by a killed worker; the next reconcile removes the record
    if record.background_jobs:
        return "background"
    if record.idle_since_unix is not None:
        return "idle"
    return "running"


def describe(record: Record, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    row = {"handle": record.handle, "agent": record.agent, "state": state_of(record), "pid": record.pid,
           "owner_pid": record.owner_pid, "session": record.session, "cwd": record.cwd, "depth": record.depth,
           "elapsed_seconds": round(max(0.0, now - record.started_unix), 1)}
    for key in ("conversation", "turn", "idle_since_unix", "background_jobs"):
        value = getattr(record, key)
        if value is not None:
            row[key] = value
    return row


def rows(home: Path, include_orphans: bool) -> list[dict[str, Any]]:
    described = [describe(r) for r in records.all_records(home)]
    return [row for row in described if include_orphans or row["state"] not in ("orphan", "ended")]


def counts(home: Path) -> dict[str, int]:
    tally = {"running": 0, "idle": 0, "orphans": 0}
    for row in rows(home, include_orphans=True):
        state = row["state"]
        if state in ("running", "background"):
            tally["running"] += 1
        elif state == "idle":
            tally["idle"] += 1
        elif state == "orphan":
            tally["orphans"] += 1
    tally["orphans_stopped"] = stopped_so_far(home)
    return tally
