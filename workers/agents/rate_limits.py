"""When an agent's account will take work again: the usage or rate limit a failed turn hit, and
its reset when the agent said it. Only three signals count (anything else of the `quota` kind
fails as before): HTTP 429, Claude Code's `rate_limit_event` with status `rejected` (`resetsAt`,
epoch seconds), and Codex's usage-limit error (`try again at 3:05 PM.`, local time to the minute,
possibly with a date; the reset is the end of that minute, or `try again in 2 days 3 hours`)."""

import re
from datetime import datetime, timedelta
from typing import Any

from scv.core.messages import RateLimit

USAGE_LIMIT, RATE_LIMIT = "usage limit", "rate limit"

_USAGE = re.compile(r"usage limit", re.IGNORECASE)
_HTTP_429 = re.compile(r"\b429\b|too many requests", re.IGNORECASE)
_AT = re.compile(r"try again at\s+(?:(?P<month>[A-Za-z]{3})[A-Za-z]*\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+"
                 r"(?P<year>\d{4}),?\s+)?(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[AaPp])?\.?[Mm]?",
                 re.IGNORECASE)
_IN = re.compile(r"try again in\s+((?:\d+\s*(?:days?|hours?|minutes?|seconds?)[\s,and]*)+)", re.IGNORECASE)
_PART = re.compile(r"(\d+)\s*(day|hour|minute|second)", re.IGNORECASE)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def for_status(status: int | None) -> RateLimit | None:
    return RateLimit(RATE_LIMIT) if status == 429 else None


def from_claude(info: Any) -> RateLimit | None:
    """A `rate_limit_event`'s `rate_limit_info`: only `rejected` stops the account."""
    if not isinstance(info, dict) or info.get("status") != "rejected":
        return None
    resets = info.get("resetsAt")
    ok = isinstance(resets, (int, float)) and not isinstance(resets, bool) and resets > 0
    return RateLimit(USAGE_LIMIT, float(resets) if ok else None)


def from_text(text: str | None, now: datetime | None = None) -> RateLimit | None:
    """A CLI's error text: Codex's usage-limit error (with its reset when it names one), or 429."""
    if not text:
        return None
    if _USAGE.search(text):
        return RateLimit(USAGE_LIMIT, _reset(text, now or datetime.now().astimezone()))
    if _HTTP_429.search(text):
        return RateLimit(RATE_LIMIT)
    return None


def _reset(text: str, now: datetime) -> float | None:
    later = _IN.search(text)
    if later:
        seconds = sum(int(n) * {"day": 86400, "hour": 3600, "minute": 60, "second": 1}[unit.lower()]
                      for n, unit in _PART.findall(later.group(1)))
        return now.timestamp() + seconds
    at = _AT.search(text)
    if not at:
        return None
    hour, minute = int(at["hour"]), int(at["minute"])
    if at["half"]:
        hour = hour % 12 + (12 if at["half"].lower() == "p" else 0)
    if hour > 23 or minute > 59:
        return None
    try:
        if at["month"]:
            month = _MONTHS.index(at["month"].lower()[:3]) + 1
            when = now.replace(year=int(at["year"]), month=month, day=int(at["day"]), hour=hour, minute=minute,
                               second=0, microsecond=0)
        else:
            when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
            if when + timedelta(minutes=1) <= now:      # a time of day already past today: tomorrow's
                when += timedelta(days=1)
    except ValueError:      # no such month or day
        return None
    return (when + timedelta(minutes=1)).timestamp()    # Codex names the minute: wait to its end
