"""The nested SCV's own background jobs, as its parent follows them from its events: a job counts
from the call that started it (`tool.completed` with `jobs: [{"job", "status": "running"}]`)
until the nested model has seen its result, through a later call that shows it (the same job with
a final status) or a report turn that names it (`turn.started` with a background `origin`),
which counts until that turn ends. Only job handles and statuses are read, so tools named
differently (a nested SCV 0.3.0's `agent_codex`) are followed the same way."""

from typing import Any

FINAL = frozenset({"completed", "failed", "timeout", "cancelled", "declined"})


def _handle(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("job"), str):
        return entry["job"]
    return None


class JobLedger:
    def __init__(self):
        self._open: set[str] = set()                    # running, or finished but not yet seen
        self._reporting: dict[str, set[str]] = {}       # report turn -> the jobs it reports

    @property
    def count(self) -> int:
        reported = set().union(*self._reporting.values()) if self._reporting else set()
        return len(self._open | reported)

    def tool_completed(self, jobs: Any) -> bool:
        """A call's job changes; True when the count changed."""
        before = self.count
        for entry in jobs if isinstance(jobs, list) else ():
            handle = _handle(entry)
            status = entry.get("status") if isinstance(entry, dict) else None
            if handle is None:
                continue
            if status == "running":
                self._open.add(handle)
            elif status in FINAL:
                self._open.discard(handle)      # the model saw its result through this call
        return self.count != before

    def turn_began(self, turn_id: Any, origin: Any) -> None:
        if not isinstance(turn_id, str) or not isinstance(origin, dict) or origin.get("kind") != "background":
            return
        named = {h for h in (_handle(e) for e in origin.get("jobs") or ()) if h}
        if named:
            self._reporting[turn_id] = named
            self._open -= named

    def turn_ended(self, turn_id: Any) -> None:
        if isinstance(turn_id, str):
            self._reporting.pop(turn_id, None)
