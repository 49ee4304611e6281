"""The events of a session, one Struct each, shared by `scv exec --json` (one `{"type": NAME, ...}`
object per line) and `scv server --stdio` (a notification `NAME` with the same params), which a
parent SCV's nested client reads (docs/protocol.md).

A session's sink receives `(name, params)`: `emit(sink, event)` turns a Struct into those, so what
goes on the wire is decided here once. An optional field left UNSET is not sent at all (a turn's
`origin`, a chat turn's `attachments`, a call's `jobs`). `tool.progress` lines are kept to two a second per call by scv/core/progress.py.

A reader (the nested SCV client) turns a notification back into its Struct with `read_event`.
What it cannot follow a turn without, the turn's id and an approval's id, must be there; any other
field a child omits (an older child's `approval.requested` has no `workspace`) reads as its empty
value: "", False, {}, [], or None where the field may be null. A field of the wrong type, or a
missing id, makes the notification unreadable (EventError), and the reader ignores it.
"""

from typing import Any, Callable

import msgspec.inspect as types

import msgspec
from msgspec import UNSET, UnsetType

EventSink = Callable[[str, dict[str, Any]], None]

TURN_STARTED = "turn.started"
ASSISTANT_DELTA = "assistant.delta"
ASSISTANT_TEXT = "assistant.text"
TOOL_STARTED = "tool.started"
TOOL_PROGRESS = "tool.progress"
TOOL_COMPLETED = "tool.completed"
APPROVAL_REQUESTED = "approval.requested"
APPROVAL_RESOLVED = "approval.resolved"
TURN_COMPLETED = "turn.completed"
TURN_FAILED = "turn.failed"
MCP_FAILED = "mcp.failed"


class Event(msgspec.Struct, tag_field="type", kw_only=True):
    pass


class TurnStarted(Event, tag=TURN_STARTED):
    turn_id: str
    prompt: str
    origin: dict[str, Any] | UnsetType = UNSET      # a turn the session started itself (a report)


class AssistantDelta(Event, tag=ASSISTANT_DELTA):
    turn_id: str
    text: str


class AssistantText(Event, tag=ASSISTANT_TEXT):
    turn_id: str
    text: str


class ToolStarted(Event, tag=TOOL_STARTED):
    turn_id: str
    call_id: str
    tool: str
    arguments: str
    risk: str | None                # None: refused before its risk was known
    summary: str | None


class ToolProgress(Event, tag=TOOL_PROGRESS):
    turn_id: str
    call_id: str
    line: str


class ToolCompleted(Event, tag=TOOL_COMPLETED):
    turn_id: str
    call_id: str
    tool: str
    ok: bool
    result: dict[str, Any]
    jobs: list[dict[str, str]] | UnsetType = UNSET  # background jobs it started or showed: {job, status}


class ApprovalRequested(Event, tag=APPROVAL_REQUESTED):
    turn_id: str
    id: str
    tool: str
    risk: str
    summary: str
    workspace: str


class ApprovalResolved(Event, tag=APPROVAL_RESOLVED):
    turn_id: str
    id: str
    approved: bool
    reason: str | UnsetType = UNSET     # "limit": answered cancelled because the run's budget was spent


class TurnCompleted(Event, tag=TURN_COMPLETED):
    turn_id: str
    reply: str
    usage: dict[str, Any]
    attachments: list[Any] | UnsetType = UNSET      # a chat turn's reply files
    origin: dict[str, Any] | UnsetType = UNSET
    structured: Any = UNSET                         # --output-schema: the validated document (may be null)
    limit: dict[str, Any] | UnsetType = UNSET       # stopped by a limit: {kind, max, used}; the reply is empty


class TurnFailed(Event, tag=TURN_FAILED):
    turn_id: str
    reason: str | None
    error: str | None
    usage: dict[str, Any]
    attachments: list[Any] | UnsetType = UNSET
    origin: dict[str, Any] | UnsetType = UNSET
    errors: list[dict[str, str]] | UnsetType = UNSET    # schema_invalid: why the last reply did not validate
    reply: str | UnsetType = UNSET                      # schema_invalid: that last reply


class McpFailed(Event, tag=MCP_FAILED):
    """An MCP server the session uses as tools is left out (it did not start, or crashed twice)."""
    server: str
    error: str
    stderr_tail: str


SessionEvent = (TurnStarted | AssistantDelta | AssistantText | ToolStarted | ToolProgress | ToolCompleted
                | ApprovalRequested | ApprovalResolved | TurnCompleted | TurnFailed | McpFailed)


def params_of(event: Event) -> dict[str, Any]:
    """The event's params as the wire carries them (without `type`)."""
    params = msgspec.to_builtins(event)
    del params["type"]
    return params


def emit(sink: EventSink, event: Event) -> None:
    sink(event.__struct_config__.tag, params_of(event))



class EventError(Exception):
    """A session event's params that cannot be read as that event (one sentence)."""


NEEDED = frozenset({"turn_id", "id"})       # what no reader can do without
_BY_NAME = {kind.__struct_config__.tag: kind for kind in SessionEvent.__args__}
_DECODERS: dict[type, msgspec.json.Decoder] = {}     # made by read_event when a kind is first read
_EMPTY = {types.StrType: str, types.BoolType: bool, types.DictType: dict, types.ListType: list}


def _empty(kind: Any) -> Any:
    info = types.type_info(kind)
    if isinstance(info, types.UnionType) and info.includes_none:
        return None
    return _EMPTY[type(info)]()


def read_event(method: str, params: bytes | msgspec.Raw) -> SessionEvent | None:
    """The event a notification carries (its method and raw params), or None for a method that is
    not a session event; EventError for params that cannot be read as it (see above)."""
    kind = _BY_NAME.get(method)
    if kind is None:
        return None
    try:
        decoder = _DECODERS.get(kind) or _DECODERS.setdefault(kind, msgspec.json.Decoder(kind))
        return decoder.decode(params)
    except msgspec.ValidationError:
        pass        # perhaps a field omitted: filled in below where the rule allows it
    except msgspec.DecodeError as err:
        raise EventError(f"the {method} notification's params are not JSON ({err})") from None
    given = msgspec.json.decode(params)
    if not isinstance(given, dict):
        raise EventError(f"the {method} notification's params are not an object")
    for field in msgspec.structs.fields(kind):
        if field.required and field.name not in given and field.name not in NEEDED:
            given[field.name] = _empty(field.type)
    try:
        return msgspec.convert(given, kind)
    except msgspec.ValidationError as err:
        raise EventError(f"the {method} notification cannot be read ({err})") from None
