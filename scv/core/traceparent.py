"""W3C Trace Context (`traceparent`, `tracestate`): read from and written to an environment, and
carried to a worker in its Call's options, so the supervisor (which opens the spans) and the
workers (which start bash and the agents) agree on one format without either importing
OpenTelemetry.

A traceparent is `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`; an all-zero id
or a malformed header is no context at all (the W3C rule: start a new trace rather than guess).
"""

import re
from typing import Any, Mapping, MutableMapping

import msgspec

TRACEPARENT = "TRACEPARENT"
TRACESTATE = "TRACESTATE"
OPTION = "trace"        # the key of a Call's options that holds the call's TraceContext

_HEADER = r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$"
_MAX_STATE = 512        # the W3C limit a vendor may truncate at


class TraceContext(msgspec.Struct, frozen=True):
    trace_id: str           # 32 lowercase hex digits
    span_id: str            # 16 lowercase hex digits
    flags: int = 1          # bit 0: sampled
    state: str = ""         # the tracestate header, passed on untouched

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags:02x}"


def parse(traceparent: str | None, tracestate: str | None = None) -> TraceContext | None:
    """The context a traceparent names, or None when it is missing or invalid."""
    if not traceparent:
        return None
    match = re.match(_HEADER, traceparent.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    # Version ff is forbidden; version 00 has exactly four fields (later versions may add more).
    if version == "ff" or (version == "00" and rest) or set(trace_id) == {"0"} or set(span_id) == {"0"}:
        return None
    state = (tracestate or "").strip()
    return TraceContext(trace_id, span_id, int(flags, 16), state if len(state) <= _MAX_STATE else "")


def from_environ(environ: Mapping[str, str]) -> TraceContext | None:
    return parse(environ.get(TRACEPARENT), environ.get(TRACESTATE))


def to_environ(environ: MutableMapping[str, str], context: TraceContext) -> None:
    """Names `context` as the parent of whatever runs with `environ`; an inherited tracestate of
    another trace does not stay behind."""
    environ[TRACEPARENT] = context.traceparent
    if context.state:
        environ[TRACESTATE] = context.state
    else:
        environ.pop(TRACESTATE, None)


def to_options(context: TraceContext | None) -> dict[str, Any]:
    """The Call options entry that carries `context` to a worker ({} when there is none)."""
    return {} if context is None else {OPTION: msgspec.to_builtins(context)}


def from_options(options: Mapping[str, Any]) -> TraceContext | None:
    """The context a Call's options carry (see `to_options`); None when tracing is off."""
    raw = options.get(OPTION)
    if raw is None:
        return None
    try:
        return msgspec.convert(raw, TraceContext)
    except msgspec.ValidationError:
        return None


def apply_options(environ: MutableMapping[str, str], options: Mapping[str, Any]) -> None:
    """A worker's step before starting a process: the call's span becomes its TRACEPARENT."""
    context = from_options(options)
    if context is not None:
        to_environ(environ, context)


def to_meta(context: TraceContext | None) -> dict[str, str]:
    """The `_meta` fields of an ACP `session/prompt` or an SCV `turn.start` ({} without a context)."""
    if context is None:
        return {}
    meta = {"traceparent": context.traceparent}
    if context.state:
        meta["tracestate"] = context.state
    return meta


def from_meta(meta: Any) -> TraceContext | None:
    if not isinstance(meta, dict):
        return None
    parent, state = meta.get("traceparent"), meta.get("tracestate")
    return parse(parent if isinstance(parent, str) else None, state if isinstance(state, str) else None)
