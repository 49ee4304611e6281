"""What an output parser keeps from one turn: the reply, usage, error and session, never the log."""

import abc
from dataclasses import dataclass, field
from typing import Any, Callable

import msgspec

from scv.core.messages import RateLimit
from scv.core.limits import Limits, Meter
from scv.core.usage import Usage, as_count

NO_LIMITS = Meter(Limits())


class Limited(Exception):
    """The call's allowance is reached: the parser stops reading (raised only with a limit set)."""

# What kind of failure a structured error describes; the first four are availability failures
# (another agent could avoid them), which the supervisor answers with a `fallback`.
SIGNIN, HTTP, QUOTA, MODEL = "signin", "http", "quota", "model"
AVAILABILITY = frozenset({SIGNIN, HTTP, QUOTA, MODEL})


@dataclass
class TurnReport:
    reply: str | None = None
    usage: Usage = field(default_factory=Usage)     # turns always, tokens and cost when said
    error: str | None = None
    error_kind: str | None = None
    refusal: bool = False
    rate_limit: RateLimit | None = None   # the failure is a usage or rate limit (workers/agents/rate_limits.py)
    vendor_session: str | None = None
    finished: bool = False        # the CLI printed its final event
    limited: bool = False         # the call's allowance was reached: the rest of the stream is not read
    json_lines: int = 0
    other_lines: int = 0


class StreamParser(abc.ABC):
    """Base of the structured parsers: `line(raw)` for each stdout line as it arrives."""

    Event: type[msgspec.Struct]

    def __init__(self, on_progress: Callable[[str], None] | None = None, meter: Meter | None = None):
        self.report = TurnReport()
        self._progress = on_progress or (lambda line: None)
        self._decoder = msgspec.json.Decoder(self.Event)
        self.meter = meter or NO_LIMITS

    def lines(self, run: bytes) -> None:
        """A run of complete lines: decoded in one step, or line by line if one is not JSON."""
        if self.report.limited:
            return
        try:
            events = self._decoder.decode_lines(run)
        except msgspec.DecodeError:
            for raw in run.split(b"\n"):
                if raw.strip() and not self.report.limited:
                    self.line(raw)
            return
        self.report.json_lines += len(events)
        try:
            for event in events:
                self.handle(event)
        except Limited:
            return          # the rest of the stream is not read: the run is being stopped

    def counted(self) -> None:
        """Where a parser's usage grew: with a limit set, raises Limited once the allowance is
        reached. Usage a stream reports only with its final event (Codex's thread totals) is the
        caller's to check, so nothing is checked once the final event arrived."""
        report = self.report
        if self.meter.on and not report.finished and self.meter.check(report.usage) is not None:
            report.limited = True
            raise Limited

    def line(self, raw: bytes) -> None:
        try:
            event = self._decoder.decode(raw)
        except msgspec.ValidationError:
            # Valid JSON in a shape this parser does not know: an unknown event, ignored.
            self.report.json_lines += 1
            return
        except msgspec.DecodeError:
            self.report.other_lines += 1
            return
        self.report.json_lines += 1
        try:
            self.handle(event)
        except Limited:
            return

    @abc.abstractmethod
    def handle(self, event: Any) -> None:
        """Updates the report (and sends progress) for one decoded event."""

    def progress(self, line: str | None) -> None:
        if line and line.strip():
            self._progress(line)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def take_tokens(usage: Usage, input_tokens: Any, output_tokens: Any, cached: Any = None) -> None:
    """Sets the token counts a stream reported; a count of another type is dropped, not the rest."""
    for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                        ("cached_input_tokens", cached)):
        if as_count(value) is not None:
            setattr(usage, name, value)


class Part(msgspec.Struct, gc=False):
    """One content part of a message (text, a tool call); fields beyond these are skipped."""
    type: Any = None
    text: Any = None
    name: Any = None
    input: Any = None
    arguments: Any = None


_parts = msgspec.json.Decoder(list[Part])


def parts_of(raw: msgspec.Raw) -> list[Part]:
    """Decodes a message's content only when a parser needs it (most events never do)."""
    try:
        return _parts.decode(raw)
    except msgspec.DecodeError:
        return []


def first_line(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None
