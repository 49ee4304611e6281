"""The usage ledger: prices, and totals that know when a cost is reported, priced, mixed or unknown."""

from scv.core.usage import Price, Usage, priced, total


def test_prices_charge_input_cached_and_output_per_million():
    usage = Usage(turns=1, input_tokens=1_000_000, cached_input_tokens=2_000_000, output_tokens=100_000)
    cost = priced(usage, Price(input=1.25, cached_input=0.125, output=10.0))
    assert cost.cost_usd == 1.25 + 0.25 + 1.0 and cost.cost_source == "prices"
    assert priced(usage, Price(input=1.0, output=0.0)).cost_usd == 3.0     # cached charged as input
    assert priced(usage, None).cost_usd is None
    reported = Usage(turns=1, input_tokens=5, output_tokens=5, cost_usd=0.5, cost_source="reported")
    assert priced(reported, Price(input=1.0, output=1.0)) is reported


def test_totals_say_where_the_cost_came_from():
    a = Usage(turns=2, input_tokens=10, output_tokens=3, cost_usd=0.5, cost_source="reported")
    b = Usage(turns=1, input_tokens=4, cached_input_tokens=2, output_tokens=1, cost_usd=0.25, cost_source="prices")
    both = total([a, b])
    assert (both.turns, both.input_tokens, both.cached_input_tokens, both.output_tokens) == (3, 14, 2, 4)
    assert both.cost_usd == 0.75 and both.cost_source == "mixed" and both.tokens() == 18
    assert total([a, a]).cost_source == "reported"
    unknown = total([a, Usage(turns=4)])
    assert unknown.cost_usd is None and unknown.cost_source is None and unknown.turns == 6
    assert total([]) == Usage() and Usage(turns=1).tokens() is None
