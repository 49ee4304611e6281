"""A batch's limits (docs/limits.md): each line's max_turns/max_tokens/max_cost_usd, combined with
its agent's [agents.NAME] limits as the smaller, and the whole batch's (`scv batch --max-tokens N
--max-cost-usd X`) over the usage its result lines report. Once the batch total reaches its limit
no task starts; the runner stops the running ones and writes the never-started ones as `limit`."""

import dataclasses
from typing import Any

import msgspec

from scv.core.errors import RefusedError, UsageError
from scv.core.limits import Budget, LimitHit, Limits, smaller, uncheckable, usage_line
from scv.core.usage import Price, Usage

LIMIT = "limit"


def line_limits(spec: Any) -> Limits:
    return Limits(max_turns=spec.max_turns, max_tokens=spec.max_tokens, max_cost_usd=spec.max_cost_usd)


def _why(prepared: Any, allowance: Limits) -> str | None:
    prepared = prepared.call        # the runner's PreparedCall holds the agent tool's AgentCall
    descriptor = prepared.offered.descriptor
    transport = prepared.backend.transport
    fmt = "nested" if descriptor.nested else "acp" if transport == "acp" else descriptor.output_format
    model, prices = prepared.model, {}
    if prepared.price is not None:      # priced by the model the call or [agents.NAME] names
        model = model or "(its configured model)"
        prices = {model: prepared.price}
    return uncheckable(allowance, descriptor.name, fmt, model, prices)


def check_batch(tasks: list[Any], limits: Limits) -> None:
    """Before anything starts: every task's agent can show what the batch's limits count."""
    for task in tasks:
        if task.prepared is None:
            continue
        why = _why(task.prepared, smaller(line_limits(task.spec), limits))
        if why is not None:
            raise UsageError(f"line {task.line} (task {task.id}): {why}")


def with_line_limits(prepared: Any, spec: Any) -> Any:
    """The prepared call (a PreparedCall of the agent tool) with its line's limits joined to its allowance; refused before launch
    when the agent's stream cannot show what a token or USD limit counts."""
    own = line_limits(spec)
    if not own.any():
        return prepared
    allowance = smaller(prepared.call.allowance, own)
    why = _why(prepared, allowance)
    if why is not None:
        raise RefusedError(why)
    return msgspec.structs.replace(prepared, call=dataclasses.replace(prepared.call, allowance=allowance))


class BatchLimits:
    """The whole batch's ceiling and the sum of its result lines' usage."""

    def __init__(self, limits: Limits, prices: dict[str, Price]):
        self.budget = Budget(limits, prices)
        self.hit: LimitHit | None = None

    def add(self, value: dict[str, Any], model: str | None) -> LimitHit | None:
        usage = value.get("usage")
        if isinstance(usage, dict):
            self.budget.spend(msgspec.convert(usage, Usage), model)
        if self.hit is None:
            self.hit = self.budget.hit()
        return self.hit

    def narrow(self, spec: Any) -> None:
        """A task about to start gets at most what is left of the batch."""
        left = self.budget.left()
        if not left.any():
            return
        joined = smaller(line_limits(spec), left)
        spec.max_tokens = None if joined.max_tokens is None else max(1, int(joined.max_tokens))
        spec.max_cost_usd = None if joined.max_cost_usd is None else max(1e-9, joined.max_cost_usd)

    def not_started(self) -> dict[str, Any]:
        return {"status": LIMIT, "limit": self.hit.wire(), "usage": None,
                "error": f"not started: the batch's {self.hit.sentence()}"}

    def stopped(self, value: dict[str, Any]) -> None:
        """A running task the batch's limit stopped."""
        value["status"] = LIMIT
        value.setdefault("limit", self.hit.wire())

    def line(self) -> str:
        return usage_line(self.budget.used())
