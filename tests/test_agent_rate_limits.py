"""What a failed turn says about its account's limit (workers/agents/rate_limits.py): only HTTP 429,
Claude Code's rejected `rate_limit_event` and Codex's usage-limit error pause an agent, and the
reset is read from each (Codex names a local minute: the reset is that minute's end)."""

from datetime import datetime

import msgspec
import pytest

from scv.core.messages import RateLimit
from workers.agents import rate_limits
from workers.agents.parse_claude import ClaudeStreamParser
from workers.agents.parse_codex import CodexJsonParser
from workers.agents.parse_pi import PiJsonParser

NOW = datetime(2026, 12, 4, 14, 2, 30).astimezone()


def at(*parts) -> float:
    return datetime(*parts).astimezone().timestamp()


@pytest.mark.parametrize("text, expected", [
    ("You've hit your usage limit. Upgrade to Pro (https://example.org/pricing) or try again at 3:05 PM.",
     RateLimit("usage limit", at(2026, 12, 4, 15, 6))),
    ("You've hit your usage limit. Upgrade to Plus to continue using Codex, or try again at Jul 5th, 2026 8:19 PM.",
     RateLimit("usage limit", at(2026, 7, 5, 20, 20))),
    ("You've hit your usage limit. Try again at 2:01 PM.",             # past today: tomorrow's
     RateLimit("usage limit", at(2026, 12, 5, 14, 2))),
    ("You've hit your usage limit. Try again at 14:02.", RateLimit("usage limit", at(2026, 12, 4, 14, 3))),
    ("You've hit your usage limit. Try again in 1 day 2 hours 3 minutes.",
     RateLimit("usage limit", NOW.timestamp() + 86400 + 7200 + 180)),
    ("You've hit your usage limit.", RateLimit("usage limit")),
    ("exceeded retry limit, last status: 429 Too Many Requests", RateLimit("rate limit")),
    ("429 Rate limit reached for requests", RateLimit("rate limit")),
    ("You've hit your usage limit. Try again at Feb 30th, 2027 1:00 AM.", RateLimit("usage limit")),
    ("unexpected status 401 Unauthorized", None),
    ("We're currently experiencing high demand", None),
    (None, None),
])
def test_error_texts(text, expected):
    assert rate_limits.from_text(text, NOW) == expected


def lines(*events) -> bytes:
    return b"".join(msgspec.json.encode(event) + b"\n" for event in events)


def test_claude_reads_only_a_rejected_rate_limit_event_and_its_reset():
    parser = ClaudeStreamParser()
    parser.lines(lines({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning",
                                                                        "resetsAt": 1778565600}},
                       {"type": "result", "is_error": False, "result": "fine", "session_id": "s"}))
    assert parser.report.rate_limit is None and parser.report.reply == "fine"
    parser = ClaudeStreamParser()
    parser.lines(lines({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1778565600,
                                                                        "rateLimitType": "five_hour"}},
                       {"type": "result", "is_error": True, "result": "You've hit your limit · resets 2pm",
                        "api_error_status": 429}))
    assert parser.report.rate_limit == RateLimit("usage limit", 1778565600.0)
    assert parser.report.error_kind == "quota"
    parser = ClaudeStreamParser()
    parser.lines(lines({"type": "result", "is_error": True, "result": "API Error: Request rejected (429)",
                        "api_error_status": 429}))
    assert parser.report.rate_limit == RateLimit("rate limit")
    parser = ClaudeStreamParser()
    parser.lines(lines({"type": "result", "is_error": True, "result": "API Error: 500 Internal server error.",
                        "api_error_status": 500}))
    assert parser.report.rate_limit is None and parser.report.error_kind == "http"


def test_codex_and_pi_read_their_error_lines():
    parser = CodexJsonParser()
    message = "You've hit your usage limit. Try again at 3:05 PM."
    parser.lines(lines({"type": "error", "message": "Reconnecting... 1/5 (usage limit)"},
                       {"type": "error", "message": message}, {"type": "turn.failed", "error": {"message": message}}))
    assert parser.report.rate_limit is not None and parser.report.rate_limit.reason == "usage limit"
    assert parser.report.rate_limit.resets_at is not None and parser.report.rate_limit.resets_at % 60 == 0
    pi = PiJsonParser()
    pi.lines(lines({"type": "message_end", "message": {"role": "assistant", "content": [], "stopReason": "error",
                                                       "errorMessage": "429 Too many requests"}}))
    assert pi.report.rate_limit == RateLimit("rate limit")
    pi.lines(lines({"type": "message_end", "message": {"role": "assistant", "content": [{"type": "text",
                                                                                        "text": "ok"}],
                                                       "stopReason": "stop"}}))
    assert pi.report.rate_limit is None          # pi's own retry went through
