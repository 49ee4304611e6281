"""When to try a model request again: 429 and 5xx answers and failed connections, a bounded
number of times, waiting what `Retry-After` asks (within a ceiling) or an exponential backoff."""

import time

import msgspec


def retryable(status: int) -> bool:
    """429 (too many requests) and every 5xx: the endpoint may answer differently in a moment."""
    return status == 429 or 500 <= status <= 599


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        import email.utils      # only for an HTTP date, after an answer came (it is not small)
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:      # NaN
        return None
    return max(0.0, seconds)


class RetryPolicy(msgspec.Struct, frozen=True):
    attempts: int = 4               # the first try and three retries
    base_seconds: float = 0.5
    cap_seconds: float = 8.0
    max_retry_after: float = 60.0   # a server asking for longer than this ends the turn instead

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds before attempt `attempt + 1` (attempt counts from 1), or None: give up."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        return min(self.cap_seconds, self.base_seconds * (2 ** (attempt - 1)))
