"""A fake batch engine for the runner's unit tests: slots per agent (a task waits for one, as on
Ray), a scripted outcome per task and attempt, and its own clock, so waiting for a slot or for a
cancelled task costs no real time. It records what the runner asked of it."""

import json
from dataclasses import dataclass, field
from pathlib import Path

from scv.batch.engine import CANCELLED, Finished, Node, Note, Progress, Started, Submission
from scv.batch.tasks import Task, TaskLine

NODE = Node(host="fake-host", id="n1", name="fake-1")

# Outcomes: completed, failed, lost (after starting), hang (runs until cancelled), stubborn (ends only
# when force-cancelled), silent (never reports once cancelled, not even when forced), limit (failed:
# the agent's usage limit, no reset) and limit:S (resets S seconds after it ends, on the fake clock).


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class _Run:
    submission: Submission
    outcome: str
    started_at: float | None = None
    cancelled: bool = False
    forced: bool = False
    done: bool = False


@dataclass
class FakeEngine:
    capacity_by_agent: dict[str, int]
    outcomes: dict[str, list[str]] = field(default_factory=dict)   # task id -> outcome per attempt
    duration: float = 1.0
    cancel_wait: float = 12.0
    progress_lines: int = 1
    note: str | None = None     # a runner's note on every result (scv/batch/engine.py Note)
    clock: FakeClock = field(default_factory=FakeClock)
    submitted: list[tuple[str, int]] = field(default_factory=list)
    starts: list[tuple[str, str, float]] = field(default_factory=list)     # (task id, agent, when)
    cancels: list[tuple[tuple[str, int], bool]] = field(default_factory=list)
    most_running: dict[str, int] = field(default_factory=dict)
    closed: bool = False

    def __post_init__(self):
        self._runs: dict[tuple[str, int], _Run] = {}
        self._queue: list[tuple[float, object]] = []

    # --- the Engine protocol -----------------------------------------------------------------

    def capacity(self) -> dict[str, int]:
        return dict(self.capacity_by_agent)

    def offers(self) -> str:
        return ", ".join(f"{name} {slots}" for name, slots in self.capacity_by_agent.items()) or "nothing"

    def submit(self, submission: Submission) -> None:
        task_id, attempt = submission.key
        self.submitted.append(submission.key)
        script = self.outcomes.get(task_id, ["completed"])
        # The n-th run of a task follows the n-th outcome (a task requeued keeps its attempt).
        runs = sum(1 for key in self.submitted if key[0] == task_id)
        self._runs[submission.key] = _Run(submission, script[min(runs, len(script)) - 1])

    def wake(self) -> None:
        self.woken = getattr(self, "woken", 0) + 1

    def cancel(self, key: tuple[str, int], force: bool = False) -> None:
        self.cancels.append((key, force))
        run = self._runs.get(key)
        if run is None or run.done:
            return
        run.cancelled = True
        run.forced = run.forced or force

    def close(self) -> None:
        self.closed = True

    def events(self, timeout: float):
        found = self._due()
        if not found:
            self.clock.now += timeout
            found = self._due()
        return found

    # --- the simulation ----------------------------------------------------------------------

    def _running(self, agent: str) -> int:
        return sum(1 for r in self._runs.values()
                   if not r.done and r.started_at is not None and r.submission.task.agent == agent)

    def _due(self) -> list:
        now, found = self.clock.now, []
        for key, run in self._runs.items():
            if run.done:
                continue
            task_id, attempt = key
            if run.started_at is None:
                if run.cancelled:
                    run.done = True
                    found.append(Finished(task_id, attempt, None, {"status": CANCELLED}))
                    continue
                agent = run.submission.task.agent
                if self._running(agent) < self.capacity_by_agent.get(agent, 0):
                    run.started_at = now
                    self.starts.append((task_id, agent, now))
                    self.most_running[agent] = max(self.most_running.get(agent, 0), self._running(agent))
                    found.append(Started(task_id, attempt, NODE))
                    found.extend(Progress(task_id, attempt, NODE, f"step {i}") for i in range(self.progress_lines))
                continue
            value = self._finish(run, now)
            if value is not None:
                run.done = True
                if self.note is not None:
                    found.append(Note(NODE, self.note))
                found.append(Finished(task_id, attempt, NODE, value))
        return found

    def _finish(self, run: _Run, now: float) -> dict | None:
        outcome = run.outcome
        if run.cancelled:
            if outcome == "silent" or (outcome == "stubborn" and not run.forced):
                return None
            return {"status": CANCELLED}
        if outcome in ("hang", "stubborn", "silent") or now - run.started_at < self.duration:
            return None
        if outcome == "lost":
            return {"status": "lost", "error": "node fake-1 died"}
        if outcome.startswith("limit"):
            after = outcome.partition(":")[2]
            return {"status": "failed", "error": "usage limit", "agent": run.submission.task.agent,
                    "rate_limit": {"reason": "usage limit", "resets_at": now + float(after) if after else None}}
        return {"status": outcome, "reply": f"did {run.submission.task.id}"}


def make_tasks(*specs: tuple[str, str | None]) -> list[Task]:
    """(id, agent) pairs -> tasks as the input file would give them."""
    return [Task(line=number, spec=TaskLine(id=task_id, prompt=f"work on {task_id}", agent=agent), prepared=None)
            for number, (task_id, agent) in enumerate(specs, start=1)]


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def write_tasks(path, *prompts, extra=None):
    lines = [json.dumps({"id": f"t{i}", "agent": "codex", "prompt": p, **(extra or {})}) for i, p in enumerate(prompts)]
    path.write_text("\n".join(lines) + "\n")
    return path
