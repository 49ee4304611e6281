"""Usage limits pause an agent instead of failing its tasks. A task whose agent's account hit a
usage or rate limit (the result's `rate_limit`, scv/core/messages.py) goes back to the queue, and
the agent starts nothing until the reset the agent named (at most `--quota-wait` seconds after
the task first hit the limit); without a reset it waits `--quota-backoff` seconds, doubling, for
at most three tries. With `--fallback claude,pi`, a task whose agent is paused runs on the first
of those agents that is offered and not paused, without the line's model and effort. A task ends
`quota` only when waiting would take longer than `--quota-wait`, or after its third backoff.

The clock is a seam (`wall`, epoch seconds): the runner's tests pass a fake beside the fake engine."""

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

import msgspec

from scv.batch.tasks import Task
from scv.core.errors import ScvError

QUOTA = "quota"
DEFAULT_WAIT = 21600.0
DEFAULT_BACKOFF = 300.0
BACKOFF_TRIES = 3


def parse_fallback(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def rate_limit_of(value: dict[str, Any]) -> dict[str, Any] | None:
    """The limit a failed task's agent hit, when it is one that waiting out avoids."""
    limit = value.get("rate_limit")
    if str(value.get("status")) != "failed" or not isinstance(limit, dict):
        return None
    return limit


def clock_text(when: float) -> str:
    moment = datetime.fromtimestamp(when)
    return moment.strftime("%H:%M" if moment.second == 0 else "%H:%M:%S")


@dataclass
class _Hits:
    first: float                # when the task first hit a limit (its --quota-wait counts from here)
    backoffs: int = 0           # limits without a reset so far


@dataclass
class QuotaGate:
    wait: float = DEFAULT_WAIT
    backoff: float = DEFAULT_BACKOFF
    fallback: tuple[str, ...] = ()
    # A task moved to another agent: the same line with that agent and no model or effort,
    # checked again (the driver's check). None: the task keeps its agent.
    retarget: Callable[[Task, str], Task] | None = None
    wall: Callable[[], float] = time.time
    offered: frozenset[str] = frozenset()
    paused_until: dict[str, float] = field(default_factory=dict)
    _hits: dict[str, _Hits] = field(default_factory=dict)

    def paused(self, agent: str | None, now: float | None = None) -> bool:
        now = self.wall() if now is None else now
        return agent is not None and self.paused_until.get(agent, 0.0) > now

    def ready(self, task: Task) -> Task | None:
        """The task to start now (itself, or moved to a fallback agent), or None while it must wait."""
        now = self.wall()
        if not self.paused(task.agent, now):
            return task
        for other in self._fallbacks(task.agent):
            if not self.paused(other, now):
                try:
                    return self.retarget(task, other)
                except ScvError:        # the line does not suit that agent (its schema, ...): the next one
                    continue
        return None

    def _fallbacks(self, agent: str | None) -> list[str]:
        if self.retarget is None:
            return []
        return [name for name in self.fallback if name != agent and name in self.offered]

    def after(self, task: Task, value: dict[str, Any], note: Callable[[str], None]) -> bool:
        """For a finished task: True when it goes back to the queue (its agent is now paused);
        False when it ends, with `value` made `quota` when it waited as long as it may."""
        limit = rate_limit_of(value)
        if limit is None or task.agent is None:
            return False
        now = self.wall()
        hits = self._hits.setdefault(task.id, _Hits(first=now))
        resets = limit.get("resets_at")
        reason = str(limit.get("reason") or "usage limit")
        if isinstance(resets, (int, float)) and not isinstance(resets, bool):
            until = max(float(resets), now)
        elif hits.backoffs >= BACKOFF_TRIES:
            return self._end(task, value, f"{task.agent} still hit its {reason} after {BACKOFF_TRIES} waits "
                                          f"(--quota-backoff {self.backoff:g} s, doubling)")
        else:
            hits.backoffs += 1
            until = now + self.backoff * 2 ** (hits.backoffs - 1)
        if until > self.paused_until.get(task.agent, 0.0):
            self.paused_until[task.agent] = until
            note(f"{task.agent} paused until {clock_text(until)} ({reason})")
        # The soonest any agent that could run the task is free again.
        free = min([until] + [self.paused_until.get(name, 0.0) for name in self._fallbacks(task.agent)])
        if free - hits.first > self.wait:
            return self._end(task, value, f"{task.agent}'s {reason} resets at {clock_text(until)}, later than "
                                          f"--quota-wait ({self.wait:g} s) allows")
        return True

    def _end(self, task: Task, value: dict[str, Any], error: str) -> bool:
        # FAILED -> QUOTA: the account never came back within the wait; the task's own work is not at fault
        self._hits.pop(task.id, None)
        value["status"] = QUOTA
        value["error"] = error
        return False


def move_to(task: Task, agent: str, prepare: Callable[[dict[str, Any]], Any]) -> Task:
    """The same task on `agent`, without the line's model and effort (they name the other agent's)."""
    spec = msgspec.structs.replace(task.spec, agent=agent, model=None, effort=None)
    return Task(task.line, spec, prepare(spec.agent_args()), agent=agent, batch=task.batch)
