"""The usage ledger: what one agent turn, one call or a whole run spent, in one shape.

Every agent's stream is read into a `Usage` (turns always; tokens and cost when the stream says
them), and totals are sums of them. `cost_source` says where the dollars came from: the agent's
own figure (`reported`), a user price table (`prices`), both (`mixed`), or unknown (`None`,
and then `cost_usd` is None too).
"""

from typing import Any

import msgspec

REPORTED, PRICES, MIXED = "reported", "prices", "mixed"


class Usage(msgspec.Struct, kw_only=True):
    turns: int = 0
    input_tokens: int | None = None          # excludes cached input
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cost_source: str | None = None

    def tokens(self) -> int | None:
        """What a token limit counts: input plus output (cached input is shown, not counted)."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def wire(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)


class Price(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """USD per million tokens, from `[prices."model"]` of the user's config."""
    input: float
    output: float
    cached_input: float | None = None    # unset: cached input is charged as input


def priced(usage: Usage, price: Price | None) -> Usage:
    """The usage with a cost from the price table when the agent reported none."""
    if usage.cost_usd is not None or price is None or usage.tokens() is None:
        return usage
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    cost = ((usage.input_tokens or 0) * price.input + (usage.cached_input_tokens or 0) * cached_rate
            + (usage.output_tokens or 0) * price.output) / 1_000_000
    return msgspec.structs.replace(usage, cost_usd=cost, cost_source=PRICES)


def _add_counts(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def total(parts: "list[Usage]") -> Usage:
    """The sum of several usages; a cost is known only when every part's is."""
    out = Usage()
    sources: set[str | None] = set()
    cost: float | None = 0.0
    for part in parts:
        out.turns += part.turns
        out.input_tokens = _add_counts(out.input_tokens, part.input_tokens)
        out.cached_input_tokens = _add_counts(out.cached_input_tokens, part.cached_input_tokens)
        out.output_tokens = _add_counts(out.output_tokens, part.output_tokens)
        sources.add(part.cost_source)
        cost = None if cost is None or part.cost_usd is None else cost + part.cost_usd
    if not parts or None in sources:
        return out
    out.cost_usd = cost
    out.cost_source = sources.pop() if len(sources) == 1 else MIXED
    return out


def as_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def as_cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)
