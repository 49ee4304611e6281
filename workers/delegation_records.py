"""The worker side of delegation tracking: while a delegated agent runs, its record lives in
`$SCV_HOME/state/delegations/<handle>.json` (see scv/core/delegations/records.py).

A run's `RecordKeeper` is made with it (workers/delegated_process.py) and handed to it as its
observer. The owning SCV process is the supervisor: the parent of this worker's fork point. When the run ends, anything still tagged
with its link is stopped (the process runner has already stopped the group and the worker's
own descendants) and the record removed.
"""

import os
import time
from pathlib import Path

import msgspec

from scv.core import lineage, oscalls
from scv.core.delegations import processes, records
from workers.agents.tracking import DelegatedRun


def _owner() -> tuple[int, float]:
    """The supervisor: this worker's parent is the fork point, whose parent owns the run."""
    owner = oscalls.parent_of(os.getppid()) or os.getppid()
    return owner, processes.start_time(owner) or 0.0


class RecordKeeper:
    def __init__(self, home: Path):
        self.home = home            # the calling session's SCV_HOME
        self.killed = False         # `scv agents kill` stopped the run this keeper watched

    def started(self, run: DelegatedRun, pid: int) -> None:
        session = lineage.session_of(lineage.last_link(run.parent))
        owner_pid, owner_start = _owner()
        record = records.Record(handle=run.handle, agent=run.agent, parent=run.parent, session=session,
                                cwd=run.cwd, depth=run.depth, pid=pid, pid_start=processes.start_time(pid) or 0.0,
                                owner_pid=owner_pid, owner_start=owner_start, started_unix=time.time(),
                                conversation=run.conversation, turn=run.turn)
        records.write(self.home, record)

    def update(self, handle: str, **changes) -> None:
        """A live agent's record between and during turns: its turn, `idle_since_unix`,
        `background_jobs` (None removes a field). A record `scv agents kill` removed stays removed."""
        record = records.read(self.home, handle)
        if record is not None:
            records.write(self.home, msgspec.structs.replace(record, **changes))

    def ended(self, run: DelegatedRun, pid: int, exit_code: int | None, signal: str | None) -> None:
        link = lineage.last_link(run.parent)
        if processes.tagged(link):
            # FINISHED -> STOPPING: descendants that escaped the group and the worker's reach.
            processes.stop_run(None, None, link)
        records.remove(self.home, run.handle)
        self.killed = records.take_stop_mark(self.home, run.handle)

