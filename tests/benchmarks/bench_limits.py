"""Counting against limits: a 10,000-event stream of each structured agent format (the captured
runs' events repeated), fed in 64 KiB chunks through the line splitter and the parser, without
limits (the baseline) and with turn, token and USD limits set that are never reached, so every
event that grows the usage is checked. Each pair runs in both orders on a shared machine; prints
the ratio with/without; the target is at most 1.02.
"""

from tests.agent_fakes import CAPTURES
from tests.benchmarks.common import interleaved, line
from scv.core.limits import Limits, Meter
from scv.core.lines import LineSplitter
from scv.core.usage import Price
from workers.agents.parse_claude import ClaudeStreamParser
from workers.agents.parse_codex import CodexJsonParser
from workers.agents.parse_pi import PiJsonParser

EVENTS = 10_000
CHUNK = 64 * 1024
ROUNDS = 41
FORMATS = {
    "claude stream-json": (ClaudeStreamParser, "claude", ["tool_bash_default_perms", "text_reply"]),
    "codex --json": (CodexJsonParser, "codex", ["tool_default_model", "text"]),
    "pi --mode json": (PiJsonParser, "pi", ["tool_bash", "text_defaults_from_settings"]),
}
NEVER = Limits(max_turns=10**9, max_tokens=10**12, max_cost_usd=1e9)
PRICE = Price(input=1.0, cached_input=0.1, output=4.0)


def _stream(agent: str, captures: list[str]) -> list[bytes]:
    """EVENTS of the format's captured lines, in CHUNK-sized pieces."""
    lines = [raw + b"\n" for name in captures
             for raw in (CAPTURES / agent / f"{name}.jsonl").read_bytes().splitlines() if raw.strip()]
    data = b"".join(lines[i % len(lines)] for i in range(EVENTS))
    return [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)]


def _parse(parser_class, chunks: list[bytes], meter: Meter | None):
    def run():
        parser = parser_class(lambda progress: None, meter)
        splitter = LineSplitter(parser.lines)
        for chunk in chunks:
            splitter.feed(chunk)
        splitter.close()
        return parser
    return run


def main() -> None:
    worst = 0.0
    for label, (parser_class, agent, captures) in FORMATS.items():
        chunks = _stream(agent, captures)
        metered = _parse(parser_class, chunks, Meter(NEVER, PRICE))
        assert not metered().report.limited
        # Both orders, so whichever runs second in a pair (warmer caches, or a busier moment) favours neither.
        plain = _parse(parser_class, chunks, None)
        a, b = interleaved(plain, metered, ROUNDS)
        c, d = interleaved(metered, plain, ROUNDS)
        without, with_limits = (a + d) / 2, (b + c) / 2
        ratio = with_limits / without
        worst = max(worst, ratio)
        line(f"{label}: {EVENTS} events without limits", f"{without * 1000:.2f} ms")
        line(f"{label}: with limits (ratio, target <= 1.02)", f"{with_limits * 1000:.2f} ms  x{ratio:.3f}")
    line("worst ratio", f"x{worst:.3f}")
