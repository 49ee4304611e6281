"""Limits on turns, tokens and dollars, and the run's budget they are checked against.

A `Limits` is three optional ceilings. A run has one `Budget`: its limits and every usage spent
under it (SCV's own model responses, delegated agents, nested SCVs, background jobs). A delegated
call gets an allowance: the smaller of its agent's own limits and what is left of the run's.
The worker that reads an agent's stream checks the allowance as each event arrives (`reached`).
"""

import threading
from typing import Any, Callable

import msgspec

from scv.core.usage import Price, Usage, priced, total

TURNS, TOKENS, COST = "turns", "tokens", "cost_usd"


class Limits(msgspec.Struct, kw_only=True, omit_defaults=True):
    max_turns: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def any(self) -> bool:
        return self.max_turns is not None or self.max_tokens is not None or self.max_cost_usd is not None

    def wire(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


class LimitHit(msgspec.Struct, kw_only=True):
    kind: str           # "turns", "tokens" or "cost_usd"
    max: float
    used: float

    def wire(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)

    def sentence(self) -> str:
        return f"the {self.kind} limit was reached ({self.used:g} used of {self.max:g})"


def _smaller(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def smaller(*limits: "Limits | None") -> Limits:
    """Each ceiling the smallest any of `limits` sets."""
    out = Limits()
    for one in limits:
        if one is None:
            continue
        out.max_turns = _smaller(out.max_turns, one.max_turns)
        out.max_tokens = _smaller(out.max_tokens, one.max_tokens)
        out.max_cost_usd = _smaller(out.max_cost_usd, one.max_cost_usd)
    return out


def reached(limits: Limits, usage: Usage) -> LimitHit | None:
    """The first limit `usage` has reached, if any (a figure the usage lacks cannot reach one)."""
    if limits.max_turns is not None and usage.turns >= limits.max_turns:
        return LimitHit(kind=TURNS, max=limits.max_turns, used=usage.turns)
    if limits.max_tokens is not None:
        tokens = usage.tokens()
        if tokens is not None and tokens >= limits.max_tokens:
            return LimitHit(kind=TOKENS, max=limits.max_tokens, used=tokens)
    if limits.max_cost_usd is not None and usage.cost_usd is not None and usage.cost_usd >= limits.max_cost_usd:
        return LimitHit(kind=COST, max=limits.max_cost_usd, used=round(usage.cost_usd, 6))
    return None


class Budget:
    """The run's limits and its ledger; shared by the turn thread and background jobs' threads."""

    def __init__(self, limits: Limits | None = None, prices: dict[str, Price] | None = None):
        self.limits = limits or Limits()
        self.prices = prices or {}
        self._parts: list[Usage] = []
        self._lock = threading.Lock()
        self._watchers: list[Callable[[], None]] = []

    def watch(self, on_hit: Callable[[], None]) -> None:
        """`on_hit` is called once a limit is reached (at once when one already is), until `unwatch`:
        what waits on the client (an approval request) stops waiting when a background job spends the rest."""
        with self._lock:
            self._watchers.append(on_hit)
        if self.hit() is not None:
            on_hit()

    def unwatch(self, on_hit: Callable[[], None]) -> None:
        with self._lock:
            if on_hit in self._watchers:
                self._watchers.remove(on_hit)

    def price(self, model: str | None) -> Price | None:
        return self.prices.get(model) if model else None

    def spend(self, usage: Usage, model: str | None = None) -> None:
        part = priced(usage, self.price(model))
        with self._lock:
            self._parts.append(part)
            watchers = list(self._watchers)
        if watchers and self.hit() is not None:
            for on_hit in watchers:
                on_hit()

    def used(self) -> Usage:
        with self._lock:
            return total(list(self._parts))

    def mark(self) -> int:
        """Where the ledger stands now: `since(mark)` is what was spent after it (one turn's share)."""
        with self._lock:
            return len(self._parts)

    def since(self, mark: int) -> Usage:
        with self._lock:
            return total(self._parts[mark:])

    def hit(self) -> LimitHit | None:
        return reached(self.limits, self.used())

    def left(self) -> Limits:
        """What is left of each ceiling (0 or less: reached)."""
        used, limits = self.used(), self.limits
        return Limits(
            max_turns=None if limits.max_turns is None else limits.max_turns - used.turns,
            max_tokens=None if limits.max_tokens is None else limits.max_tokens - (used.tokens() or 0),
            max_cost_usd=None if limits.max_cost_usd is None else limits.max_cost_usd - (used.cost_usd or 0.0))

    def allowance(self, own: Limits | None) -> Limits:
        return smaller(own, self.left())


def usage_line(usage: Usage) -> str:
    """The run's total as one line for people (scv exec's stderr, a batch tally)."""
    parts = [f"{usage.turns} turns"]
    if usage.tokens() is not None:
        parts.append(f"{usage.input_tokens or 0} input tokens ({usage.cached_input_tokens or 0} cached), "
                     f"{usage.output_tokens or 0} output tokens")
    else:
        parts.append("tokens unknown")
    parts.append(f"${usage.cost_usd:.4f} ({usage.cost_source})" if usage.cost_usd is not None else "cost unknown")
    return "usage: " + ", ".join(parts)


# What each agent's stream says, by its output format (the CLI per turn) or transport: whether it
# reports tokens and whether it reports its own cost (else the cost is tokens x [prices]).
# docs/limits.md has the same table.
_REPORTS = {"claude-stream": (True, True), "codex-json": (True, False), "pi-json": (True, True),
            "text": (False, False), "acp": (True, False), "nested": (True, True)}


def reports(output_format: str) -> tuple[bool, bool]:
    return _REPORTS.get(output_format, (False, False))


def uncheckable(limits: Limits, who: str, output_format: str, model: str | None,
                prices: dict[str, Price]) -> str | None:
    """Why a token or USD limit cannot be checked on this agent's stream (None: it can)."""
    tokens, cost = reports(output_format)
    if (limits.max_tokens is not None or limits.max_cost_usd is not None) and not tokens:
        which = "max_tokens" if limits.max_tokens is not None else "max_cost_usd"
        return (f"{who} reports no token usage in its stream, so its {which} limit cannot be checked; use a "
                "max_turns limit for it instead")
    if limits.max_cost_usd is not None and not cost and (model is None or model not in prices):
        named = f"model {model!r}" if model else "its model (none is set)"
        return (f"{who} reports no cost, and [prices] has no entry for {named}, so its max_cost_usd limit cannot "
                f"be checked; add [prices.\"{model or 'MODEL'}\"] input, cached_input and output (USD per million "
                "tokens) to your config.toml" + ("" if model else " and name the model"))
    return None


class Meter:
    """A delegated call's allowance checked against its stream's usage as it arrives (in the worker).
    `args` carries the allowance as `limits` and the model's price as `price` (see `call_fields`)."""

    def __init__(self, limits: Limits, price: Price | None = None):
        self.limits = limits
        self.price = price
        self.on = limits.any()
        self.hit: LimitHit | None = None

    @classmethod
    def of(cls, args: dict[str, Any]) -> "Meter":
        limits = msgspec.convert(args.get("limits") or {}, Limits)
        price = args.get("price")
        return cls(limits, msgspec.convert(price, Price) if price else None)

    def check(self, usage: Usage) -> LimitHit | None:
        """The limit `usage` reached (kept once found), or None; cheap when no limit is set. Called
        for each event that grows the usage, so it compares numbers and builds nothing until a hit."""
        if not self.on or self.hit is not None:
            return self.hit
        limits = self.limits
        if limits.max_turns is not None and usage.turns >= limits.max_turns:
            self.hit = reached(limits, usage)
        elif limits.max_tokens is not None and (usage.input_tokens or 0) + (usage.output_tokens or 0) >= limits.max_tokens:
            self.hit = reached(limits, usage)
        elif limits.max_cost_usd is not None:
            cost = usage.cost_usd
            if cost is None and self.price is not None:
                price = self.price
                cached = price.cached_input if price.cached_input is not None else price.input
                cost = ((usage.input_tokens or 0) * price.input + (usage.cached_input_tokens or 0) * cached
                        + (usage.output_tokens or 0) * price.output) / 1_000_000
            if cost is not None and cost >= limits.max_cost_usd:
                self.hit = reached(limits, priced(usage, self.price))
        return self.hit


def own_cost_refusal(limits: Limits, model: str, prices: dict[str, Price]) -> str | None:
    """A session's own model responses are priced from [prices] only: a USD limit needs its entry."""
    if limits.max_cost_usd is None or model in prices:
        return None
    return (f"a USD limit needs the cost of this run's model {model!r}, and [prices] has no entry for it; add "
            f"[prices.\"{model}\"] input, cached_input and output (USD per million tokens) to your config.toml, "
            "or drop the USD limit")


def call_fields(allowance: Limits, price: Price | None) -> dict[str, Any]:
    """What a delegated call's worker needs to enforce its allowance."""
    return {"limits": allowance.wire(), "price": msgspec.to_builtins(price) if price is not None else None}


def spent(allowance: Limits) -> LimitHit | None:
    """The ceiling already at or below zero when a call would start (the run's budget is gone)."""
    for kind, value in ((TURNS, allowance.max_turns), (TOKENS, allowance.max_tokens),
                        (COST, allowance.max_cost_usd)):
        if value is not None and value <= 0:
            return LimitHit(kind=kind, max=0, used=0)
    return None
