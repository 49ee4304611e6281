"""The client protocol's messages as msgspec Structs, one decoder per direction.

Client -> server: requests, a union tagged by `method`, each with its own params Struct
(`forbid_unknown_fields`, snake_case names). A message that does not decode is classified
into the JSON-RPC error the server answers with (parse error, invalid request, method not
found, invalid params), keeping the request's id when it has one.
Server -> client: responses, errors and notifications, decoded by clients as one Struct.
"""

from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec import Meta

from scv.core.chat.layout import SAFE_ID

PROTOCOL_VERSION = 3
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_ERROR = -32000       # the request was understood but cannot be done now (state, config)

RequestId = Union[int, str, None]


# --- params ------------------------------------------------------------------------------------

class Params(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Every request's params may carry `_meta` (as in ACP and MCP): data about the request, not
    part of it, such as the caller's `traceparent` on turn.start (docs/tracing.md). Anything in
    it that SCV does not use is ignored."""
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class InitializeParams(Params, forbid_unknown_fields=True, kw_only=True):
    protocol_version: int


SafeId = Annotated[str, Meta(pattern=SAFE_ID)]


class ChannelParams(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The chat conversation a bridge's session serves (docs/channels.md)."""
    kind: Literal["wechat", "feishu"]
    account: SafeId
    conversation: SafeId
    log: Annotated[str, Meta(min_length=1, max_length=4096)] | None = None
    keep_days: Annotated[int, Meta(ge=1, le=36500)] | None = None


class LimitsParams(Params, forbid_unknown_fields=True, kw_only=True):
    """What is left of a parent's budget (docs/limits.md): the session enforces it with its own."""
    max_turns: Annotated[int, Meta(ge=1)] | None = None
    max_tokens: Annotated[int, Meta(ge=1)] | None = None
    max_cost_usd: Annotated[float, Meta(gt=0)] | None = None


class SessionStartParams(Params, forbid_unknown_fields=True, kw_only=True):
    cwd: str | None = None
    delegation_depth: Annotated[int, Meta(ge=0, le=64)] = 0
    model: str | None = None
    auto_approve: bool = False
    system_prompt: str | None = None
    channel: ChannelParams | None = None
    limits: LimitsParams | None = None


class TurnStartParams(Params, forbid_unknown_fields=True, kw_only=True):
    prompt: Annotated[str, Meta(min_length=1)]


class NoParams(Params, forbid_unknown_fields=True, kw_only=True):
    pass


class ApprovalResolveParams(Params, forbid_unknown_fields=True, kw_only=True):
    id: str
    approved: bool


# --- client -> server --------------------------------------------------------------------------

class _Request(msgspec.Struct, tag_field="method", forbid_unknown_fields=True, kw_only=True):
    jsonrpc: Literal["2.0"]
    # UNSET (no "id" member): a notification, answered with nothing, not even an error.
    # An explicit null is a request whose response carries "id": null.
    id: RequestId | msgspec.UnsetType = msgspec.UNSET

    @property
    def notification(self) -> bool:
        return self.id is msgspec.UNSET


class Initialize(_Request, tag="initialize"):
    params: InitializeParams


class SessionStart(_Request, tag="session.start"):
    params: SessionStartParams = msgspec.field(default_factory=SessionStartParams)


class TurnStart(_Request, tag="turn.start"):
    params: TurnStartParams


class TurnCancel(_Request, tag="turn.cancel"):
    params: NoParams = msgspec.field(default_factory=NoParams)


class ApprovalResolve(_Request, tag="approval.resolve"):
    params: ApprovalResolveParams


class SessionClose(_Request, tag="session.close"):
    params: NoParams = msgspec.field(default_factory=NoParams)


ClientRequest = Union[Initialize, SessionStart, TurnStart, TurnCancel, ApprovalResolve, SessionClose]
METHODS = ("initialize", "session.start", "turn.start", "turn.cancel", "approval.resolve", "session.close")

_client_decoder = msgspec.json.Decoder(ClientRequest)


class BadMessage(Exception):
    """A client message the server cannot act on: the JSON-RPC error to answer with."""

    def __init__(self, code: int, message: str, id: RequestId = None, *, notification: bool = False):
        super().__init__(message)
        self.code = code
        self.id = id
        # A well-formed notification (no "id" member): JSON-RPC 2.0 sends no reply, errors included.
        self.notification = notification


def decode_request(line: bytes) -> ClientRequest:
    try:
        return _client_decoder.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise _classify(line, exc) from None


def _classify(line: bytes, exc: Exception) -> BadMessage:
    try:
        data = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return BadMessage(PARSE_ERROR, "the message is not valid JSON; send one JSON-RPC object per line")
    if not isinstance(data, dict):
        return BadMessage(INVALID_REQUEST, "the message is not a JSON object; send a JSON-RPC 2.0 request")
    raw_id = data.get("id")
    id = raw_id if isinstance(raw_id, (int, str)) and not isinstance(raw_id, bool) else None
    if data.get("jsonrpc") != "2.0":
        return BadMessage(INVALID_REQUEST, "the message lacks \"jsonrpc\": \"2.0\"", id)
    if "id" in data and id is None and raw_id is not None:
        return BadMessage(INVALID_REQUEST, "the request id must be an integer or a string")
    method = data.get("method")
    if not isinstance(method, str):
        return BadMessage(INVALID_REQUEST, "the request has no \"method\" string", id)
    notification = "id" not in data
    if method not in METHODS:
        return BadMessage(METHOD_NOT_FOUND, f"unknown method {method[:100]!r}; the methods are: {', '.join(METHODS)}",
                          id, notification=notification)
    text = str(exc)
    return BadMessage(INVALID_PARAMS, f"invalid {method} request: {text[0].lower() + text[1:] if text else text}", id,
                      notification=notification)


# --- server -> client --------------------------------------------------------------------------

class ErrorObject(msgspec.Struct):
    code: int
    message: str


class Response(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: RequestId
    result: Any


class ErrorResponse(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: RequestId
    error: ErrorObject


class Notification(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    method: str
    params: dict[str, Any]


class ServerMessage(msgspec.Struct, kw_only=True):
    """Any server message, as a client decodes it: a response has `id` and `result` or `error`;
    a notification has `method` and `params`."""

    jsonrpc: Literal["2.0"]
    id: RequestId = None
    result: Any = None
    error: ErrorObject | None = None
    method: str | None = None
    params: dict[str, Any] | None = None


_encoder = msgspec.json.Encoder()
_server_decoder = msgspec.json.Decoder(ServerMessage)


def encode(message: Response | ErrorResponse | Notification) -> bytes:
    return _encoder.encode(message) + b"\n"


def decode_server_message(line: bytes) -> ServerMessage:
    return _server_decoder.decode(line)
