"""The client protocol's messages as msgspec Structs, one decoder per direction.

Client -> server: the server reads the JSON-RPC envelope with the one connection of
scv/core/jsonrpc.py (which answers a line that is not a request: parse error, invalid request);
here each method's params Struct (`forbid_unknown_fields`, snake_case names) and `decode_params`,
which says method not found or invalid params, keeping the request's id.
Server -> client: responses, errors and notifications, decoded by clients as one Struct.
"""

from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec import Meta

from scv.core.chat.layout import SAFE_ID
from scv.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Incoming

PROTOCOL_VERSION = 3
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

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

PARAMS: dict[str, type[Params]] = {
    "initialize": InitializeParams,
    "session.start": SessionStartParams,
    "turn.start": TurnStartParams,
    "turn.cancel": NoParams,
    "approval.resolve": ApprovalResolveParams,
    "session.close": NoParams,
}
METHODS = tuple(PARAMS)

_param_decoders = {kind: msgspec.json.Decoder(kind) for kind in set(PARAMS.values())}
_NO_PARAMS = (b"null", b"{}")


class BadMessage(Exception):
    """A client message the server cannot act on: the JSON-RPC error to answer with."""

    def __init__(self, code: int, message: str, id: RequestId | msgspec.UnsetType = None, *,
                 notification: bool = False):
        super().__init__(message)
        self.code = code
        self.id = id
        # A well-formed notification (no "id" member): JSON-RPC 2.0 sends no reply, errors included.
        self.notification = notification


def decode_params(incoming: Incoming) -> Params:
    """The params of a request the server's connection read (scv/core/jsonrpc.py), as its method's
    Struct; BadMessage (method not found, invalid params) when it has no such method or shape."""
    method, notification = incoming.method, not incoming.answer
    rid = incoming.id if incoming.answer else msgspec.UNSET
    kind = PARAMS.get(method)
    if kind is None:
        raise BadMessage(METHOD_NOT_FOUND, f"unknown method {method[:100]!r}; the methods are: {', '.join(METHODS)}",
                         rid, notification=notification)
    raw = bytes(incoming.params)
    try:
        # No params, or null: the method's defaults (a request whose params are all optional).
        return _param_decoders[kind].decode(b"{}" if raw.strip() in _NO_PARAMS else raw)
    except msgspec.DecodeError as exc:
        text = str(exc).replace("`$", "`$.params")
        if " - at `" not in text:
            text += " - at `$.params`"
        raise BadMessage(INVALID_PARAMS, f"invalid {method} request: {text[0].lower() + text[1:]}", rid,
                         notification=notification) from None


# --- server -> client --------------------------------------------------------------------------

class ErrorObject(msgspec.Struct):
    code: int
    message: str


class ServerMessage(msgspec.Struct, kw_only=True):
    """Any server message, as a client decodes it: a response has `id` and `result` or `error`;
    a notification has `method` and `params`."""

    jsonrpc: Literal["2.0"]
    id: RequestId = None
    result: Any = None
    error: ErrorObject | None = None
    method: str | None = None
    params: dict[str, Any] | None = None


_server_decoder = msgspec.json.Decoder(ServerMessage)


def decode_server_message(line: bytes) -> ServerMessage:
    return _server_decoder.decode(line)
