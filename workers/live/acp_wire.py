"""The Agent Client Protocol on the wire: newline-delimited JSON-RPC 2.0 over a pipe pair, with
camelCase keys, as msgspec Structs with one decoder per direction.

Each direction numbers its own requests: a response is matched only against the ids this side
sent, and a request from the agent carries the agent's ids, so both sides may use id 0 at once.
A line is at most 50 MiB; a longer one is skipped without being held. Whatever the agent sends
that this client does not know (unknown fields, notifications, `session/update` variants, a
message that is not JSON-RPC at all) is ignored and the connection goes on: nothing the agent
writes can end it except closing its stdout.

Incoming messages are decoded in two steps: the envelope (id, method, and the params, result and
error as raw JSON), then the part the conversation needs, by the method or by the request the
response answers. The envelope of a run of lines is decoded in one call.
"""

from collections import deque
from dataclasses import dataclass
from typing import Any, Union

import msgspec

from scv.core.lines import LineSplitter

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 50 << 20
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
AUTH_REQUIRED = -32000

_NULL = msgspec.Raw(b"null")


class WireError(Exception):
    """A message the conversation needed did not have the shape ACP gives it."""


# --- agent -> client: the envelope ---------------------------------------------------------

class Envelope(msgspec.Struct, gc=False):
    id: int | str | None | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw = _NULL
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    @property
    def is_request(self) -> bool:
        return self.method is not msgspec.UNSET and self.id is not msgspec.UNSET and self.id is not None

    @property
    def is_notification(self) -> bool:
        return self.method is not msgspec.UNSET and self.id is msgspec.UNSET


@dataclass
class Response:
    """The answer to one of this client's requests."""
    id: int
    method: str                 # what was asked
    result: msgspec.Raw | None
    error: "RpcError | None"


@dataclass
class Incoming:
    """A request or notification from the agent (params still raw)."""
    method: str
    params: msgspec.Raw
    id: int | str | None = None         # None: a notification


class RpcError(msgspec.Struct, gc=False):
    code: int = 0
    message: str = ""
    data: Any = None

    def text(self) -> str:
        """The agent's own words: the message, with its details when it gives any."""
        detail = self.data
        if isinstance(detail, dict):
            detail = detail.get("details") or detail.get("message") or detail.get("error")
        if isinstance(detail, str) and detail.strip() and detail.strip() not in self.message:
            return f"{self.message}: {detail.strip()}" if self.message else detail.strip()
        return self.message or f"JSON-RPC error {self.code}"


# --- agent -> client: the parts the conversation reads -------------------------------------

class _Camel(msgspec.Struct, rename="camel", gc=False):
    pass


class AgentInfo(_Camel):
    name: Any = None
    version: Any = None


class InitializeResult(_Camel):
    protocol_version: int
    agent_info: AgentInfo | None = None


class Mode(_Camel):
    id: str
    name: Any = None


class Modes(_Camel):
    current_mode_id: Any = None
    available_modes: list[Mode] = []


class ConfigOption(_Camel):
    id: str
    name: Any = None
    category: Any = None
    type: Any = None
    current_value: Any = None
    options: list[Any] = []

    def values(self) -> list[str]:
        """The values a select option offers, flattening ACP's option groups."""
        out = []
        for entry in self.options:
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("value"), str):
                out.append(entry["value"])
            elif isinstance(entry.get("options"), list):
                out.extend(o["value"] for o in entry["options"] if isinstance(o, dict) and isinstance(o.get("value"), str))
        return out


class NewSessionResult(_Camel):
    session_id: str
    modes: Modes | None = None
    config_options: list[ConfigOption] | None = None


class ConfigOptionsResult(_Camel):
    config_options: list[ConfigOption] | None = None


class Usage(_Camel):
    input_tokens: Any = None
    output_tokens: Any = None
    cached_read_tokens: Any = None


class PromptResult(_Camel):
    stop_reason: str
    usage: Usage | None = None


class Location(_Camel):
    path: Any = None


class PermissionToolCall(_Camel):
    tool_call_id: Any = None
    title: Any = None
    kind: Any = None
    locations: list[Location] | None = None


class PermissionOption(_Camel):
    option_id: str
    kind: Any = None
    name: Any = None


class PermissionParams(_Camel):
    tool_call: PermissionToolCall
    options: list[PermissionOption] = []
    session_id: Any = None


# session/update: a union tagged by `sessionUpdate`. Variants the conversation has no use for are
# listed too, as empty Structs whose fields are skipped, so the common ones cost no exception.

class _Update(msgspec.Struct, tag_field="sessionUpdate", rename="camel", gc=False):
    pass


class ContentBlock(_Camel):
    type: Any = None
    text: Any = None


class MessageChunk(_Update, tag="agent_message_chunk"):
    content: ContentBlock | None = None


class ToolCallStart(_Update, tag="tool_call"):
    tool_call_id: Any = None
    title: Any = None
    kind: Any = None
    status: Any = None


class ToolCallProgress(_Update, tag="tool_call_update"):
    tool_call_id: Any = None
    title: Any = None
    kind: Any = None
    status: Any = None


class PlanEntry(_Camel):
    content: Any = None
    status: Any = None


class PlanUpdate(_Update, tag="plan"):
    entries: list[PlanEntry] = []


class ConfigOptionUpdate(_Update, tag="config_option_update"):
    config_options: list[ConfigOption] = []


class CurrentModeUpdate(_Update, tag="current_mode_update"):
    current_mode_id: Any = None


class ThoughtChunk(_Update, tag="agent_thought_chunk"):
    pass


class UserChunk(_Update, tag="user_message_chunk"):
    pass


class UsageUpdate(_Update, tag="usage_update"):
    pass


class CommandsUpdate(_Update, tag="available_commands_update"):
    pass


class SessionInfoUpdate(_Update, tag="session_info_update"):
    pass


Update = Union[MessageChunk, ToolCallStart, ToolCallProgress, PlanUpdate, ConfigOptionUpdate, CurrentModeUpdate,
               ThoughtChunk, UserChunk, UsageUpdate, CommandsUpdate, SessionInfoUpdate]


class SessionNotification(_Camel):
    update: Update
    session_id: Any = None


_envelope = msgspec.json.Decoder(Envelope)
_error = msgspec.json.Decoder(RpcError)
_update = msgspec.json.Decoder(SessionNotification)
_decoders: dict[type, msgspec.json.Decoder] = {}


def decode_as(raw: msgspec.Raw | None, kind: type):
    """`raw` as `kind`; WireError (one sentence) when it has another shape."""
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    try:
        return decoder.decode(raw if raw is not None else b"null")
    except msgspec.DecodeError as err:
        raise WireError(f"the agent's {kind.__name__} does not have ACP's shape ({err})") from None


def decode_update(params: msgspec.Raw) -> Update | None:
    """A `session/update`'s update; None for a variant this client does not know (or a broken one)."""
    try:
        return _update.decode(params).update
    except msgspec.DecodeError:
        return None


# --- client -> agent -----------------------------------------------------------------------

class FileSystemCapability(_Camel):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientCapabilities(_Camel):
    fs: FileSystemCapability = msgspec.field(default_factory=FileSystemCapability)
    terminal: bool = False


class ClientInfo(_Camel):
    name: str
    version: str


class InitializeParams(_Camel):
    protocol_version: int
    client_capabilities: ClientCapabilities
    client_info: ClientInfo


class NewSessionParams(_Camel):
    cwd: str
    mcp_servers: list[Any] = []


class SetModeParams(_Camel):
    session_id: str
    mode_id: str


class SetConfigOptionParams(_Camel):
    session_id: str
    config_id: str
    value: str


class TextBlock(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class PromptParams(_Camel):
    session_id: str
    prompt: list[TextBlock]
    # The call's span (traceparent, tracestate), when SCV traces: docs/tracing.md.
    meta: dict[str, str] | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name="_meta")


class CancelParams(_Camel):
    session_id: str


class SelectedOutcome(msgspec.Struct, tag_field="outcome", tag="selected", rename="camel"):
    option_id: str


class CancelledOutcome(msgspec.Struct, tag_field="outcome", tag="cancelled"):
    pass


class PermissionResult(msgspec.Struct):
    outcome: SelectedOutcome | CancelledOutcome


class _OutRequest(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int
    method: str
    params: Any


class _OutNotification(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    method: str
    params: Any


class _OutResult(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str
    result: Any


class _OutErrorBody(msgspec.Struct):
    code: int
    message: str


class _OutError(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str | None
    error: _OutErrorBody


_encoder = msgspec.json.Encoder()


class Wire:
    """Both directions of one ACP connection. `feed()` takes what the agent printed and returns
    what it means; the send methods queue lines in `out` for the caller to write as the pipe
    takes them (non-blocking, so a stalled agent never stalls SCV)."""

    def __init__(self, first_id: int = 0, limit: int = MAX_LINE_BYTES):
        self._next_id = first_id
        self.pending: dict[int, str] = {}         # this side's requests still unanswered: id -> method
        self.out = bytearray()
        self.ignored = 0                          # lines that were not a message this client knows
        self._ready: deque = deque()
        self._splitter = LineSplitter(self._on_lines, limit)

    @property
    def skipped(self) -> int:
        """Lines over the limit, skipped."""
        return self._splitter.skipped

    # --- sending ---

    def request(self, method: str, params: msgspec.Struct) -> int:
        request_id = self._next_id
        self._next_id += 1
        self.pending[request_id] = method
        self.out += _encoder.encode(_OutRequest(id=request_id, method=method, params=params)) + b"\n"
        return request_id

    def notify(self, method: str, params: msgspec.Struct) -> None:
        self.out += _encoder.encode(_OutNotification(method=method, params=params)) + b"\n"

    def respond(self, request_id: int | str, result: Any) -> None:
        self.out += _encoder.encode(_OutResult(id=request_id, result=result)) + b"\n"

    def respond_error(self, request_id: int | str | None, code: int, message: str) -> None:
        self.out += _encoder.encode(_OutError(id=request_id, error=_OutErrorBody(code, message))) + b"\n"

    # --- receiving ---

    def feed(self, chunk: bytes) -> list[Response | Incoming]:
        self._splitter.feed(chunk)
        return self._take()

    def close(self) -> list[Response | Incoming]:
        """The agent's stdout ended: a last line without a newline still counts."""
        self._splitter.close()
        return self._take()

    def _take(self) -> list[Response | Incoming]:
        ready = list(self._ready)
        self._ready.clear()
        return ready

    def _on_lines(self, run: bytes) -> None:
        try:
            envelopes = _envelope.decode_lines(run)
        except msgspec.DecodeError:
            envelopes = []
            for line in run.split(b"\n"):
                if not line.strip():
                    continue
                try:
                    envelopes.append(_envelope.decode(line))
                except msgspec.DecodeError:
                    self.ignored += 1
        for envelope in envelopes:
            self._route(envelope)

    def _route(self, envelope: Envelope) -> None:
        if envelope.method is not msgspec.UNSET:
            if envelope.is_notification:
                self._ready.append(Incoming(envelope.method, envelope.params))
            elif envelope.is_request:
                self._ready.append(Incoming(envelope.method, envelope.params, envelope.id))
            else:
                self.ignored += 1               # "id": null with a method: not a request ACP sends
            return
        # A response: only to an id this side sent and has not seen answered.
        method = self.pending.pop(envelope.id, None) if isinstance(envelope.id, int) else None
        if method is None:
            self.ignored += 1
            return
        error = None
        if envelope.error is not msgspec.UNSET:
            try:
                error = _error.decode(envelope.error)
            except msgspec.DecodeError:
                error = RpcError(0, "the agent answered with an error of no known shape")
        result = None if envelope.result is msgspec.UNSET else envelope.result
        if error is None and result is None:
            error = RpcError(0, "the agent answered with neither a result nor an error")
        self._ready.append(Response(envelope.id, method, result, error))
