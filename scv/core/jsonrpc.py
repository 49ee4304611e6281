"""One JSON-RPC 2.0 connection over newline-delimited lines: what the ACP client, the nested SCV
client, the stdio server and the MCP code on both sides speak, each with its own method Structs on top.

Each direction numbers its own requests: a response is matched only against the ids this side
sent and has not seen answered, and a request from the peer carries the peer's ids, so both sides
may use id 0 at once. A line is at most `limit` bytes; a longer one is skipped without being held.
Whatever the peer sends that this side does not know (unknown fields, notifications, a message that
is not JSON-RPC at all, a response to no request in flight) is ignored and counted, and the
connection goes on: nothing the peer writes can end it except closing its end. A server's side
that answers what it cannot read (`strict`) gets such a line back as `Unreadable`, in its place
among the messages, with the JSON-RPC error to answer it with.

Incoming messages are decoded in two steps: the envelope (id, method, and the params, result and
error as raw JSON), then the part the caller needs, by the method or by the request the response
answers (`decode_as`). The envelopes of a run of lines are decoded in one call. Sending only
queues bytes in `out`, for the caller to write as the pipe takes them, so a stalled peer never
stalls this side.
"""

from collections import deque
from dataclasses import dataclass
from typing import Any

import msgspec

from scv.core.lines import LineSplitter

MAX_LINE_BYTES = 50 << 20
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_NULL = msgspec.Raw(b"null")


class WireError(Exception):
    """A message the caller needed did not have the shape its protocol gives it."""


class Envelope(msgspec.Struct, gc=False):
    jsonrpc: str | msgspec.UnsetType = msgspec.UNSET
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


class RpcError(msgspec.Struct, gc=False):
    code: int = 0
    message: str = ""
    data: Any = None

    def text(self) -> str:
        """The peer's own words: the message, with its details when it gives any."""
        detail = self.data
        if isinstance(detail, dict):
            detail = detail.get("details") or detail.get("message") or detail.get("error")
        if isinstance(detail, str) and detail.strip() and detail.strip() not in self.message:
            return f"{self.message}: {detail.strip()}" if self.message else detail.strip()
        return self.message or f"JSON-RPC error {self.code}"


@dataclass
class Response:
    """The answer to one of this side's requests."""
    id: int
    method: str                 # what was asked
    result: msgspec.Raw | None
    error: RpcError | None


@dataclass
class Incoming:
    """A request or notification from the peer (params still raw)."""
    method: str
    params: msgspec.Raw
    id: int | str | None = None         # None: a notification, unless `answer` says otherwise
    answer: bool | None = None          # a response is owed: a request, or (strict) one with "id": null

    def __post_init__(self):
        if self.answer is None:
            self.answer = self.id is not None


@dataclass
class Unreadable:
    """A line a strict connection cannot act on: the error to answer it with, and its id if any."""
    code: int
    message: str
    id: int | str | None = None


NOT_JSON = "the message is not valid JSON; send one JSON-RPC object per line"
NOT_AN_OBJECT = "the message is not a JSON object; send a JSON-RPC 2.0 request"
NO_VERSION = 'the message lacks "jsonrpc": "2.0"'
BAD_ID = "the request id must be an integer or a string"
NO_METHOD = 'the request has no "method" string'


def _id_of(raw: Any) -> int | str | None:
    return raw if isinstance(raw, (int, str)) and not isinstance(raw, bool) else None


def _unreadable(line: bytes) -> Unreadable:
    """Why a line is no message: the first thing wrong with it, as a server answers it."""
    try:
        data = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return Unreadable(PARSE_ERROR, NOT_JSON)
    if not isinstance(data, dict):
        return Unreadable(INVALID_REQUEST, NOT_AN_OBJECT)
    rid = _id_of(data.get("id"))
    if data.get("jsonrpc") != "2.0":
        return Unreadable(INVALID_REQUEST, NO_VERSION, rid)
    if rid is None and data.get("id") is not None:
        return Unreadable(INVALID_REQUEST, BAD_ID)
    if not isinstance(data.get("method"), str):
        return Unreadable(INVALID_REQUEST, NO_METHOD, rid)
    return Unreadable(INVALID_REQUEST, "the message is not a JSON-RPC 2.0 request")    # an id out of range


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


class _OutErrorBody(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class _OutError(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str | None
    error: _OutErrorBody


_envelope = msgspec.json.Decoder(Envelope)
_error = msgspec.json.Decoder(RpcError)
_encoder = msgspec.json.Encoder()
_decoders: dict[Any, msgspec.json.Decoder] = {}


def decode_as(raw: msgspec.Raw | bytes | None, kind: Any, what: str = "the peer's message"):
    """`raw` as `kind` (a Struct, or a type such as `dict[str, Any]`); WireError (one sentence)
    when it has another shape."""
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    try:
        return decoder.decode(raw if raw is not None else b"null")
    except msgspec.DecodeError as err:
        name = getattr(kind, "__name__", str(kind))
        raise WireError(f"{what} {name} does not have the expected shape ({err})") from None


class Connection:
    """Both directions of one JSON-RPC line connection. `feed()` takes what the peer wrote and
    returns what it means, in order; the send methods queue lines in `out`."""

    def __init__(self, first_id: int = 0, limit: int = MAX_LINE_BYTES, peer: str = "the peer", *,
                 strict: bool = False):
        """`strict`: a server's side, which answers what it cannot read. A line that is no
        message, lacks `"jsonrpc": "2.0"`, or is over the limit comes back as `Unreadable`, and a
        request with `"id": null` is a request (its response carries that null)."""
        self._next_id = first_id
        self.peer = peer
        self.strict = strict
        self.pending: dict[int, str] = {}         # this side's requests still unanswered: id -> method
        self.out = bytearray()
        self.ignored = 0                          # lines that were not a message this side knows
        self.unmatched = 0                        # responses to no request in flight (counted in ignored too)
        self._ready: deque = deque()
        self._splitter = LineSplitter(self._on_lines, limit, on_skip=self._on_skip if strict else None)

    @property
    def skipped(self) -> int:
        """Lines over the limit, skipped."""
        return self._splitter.skipped

    # --- sending ---

    def request(self, method: str, params: Any) -> int:
        request_id = self._next_id
        self._next_id += 1
        self.pending[request_id] = method
        self.out += _encoder.encode(_OutRequest(id=request_id, method=method, params=params)) + b"\n"
        return request_id

    def notify(self, method: str, params: Any) -> None:
        self.out += _encoder.encode(_OutNotification(method=method, params=params)) + b"\n"

    def respond(self, request_id: int | str, result: Any) -> None:
        self.out += _encoder.encode(_OutResult(id=request_id, result=result)) + b"\n"

    def respond_error(self, request_id: int | str | None, code: int, message: str, data: Any = None) -> None:
        self.out += _encoder.encode(_OutError(id=request_id, error=_OutErrorBody(code, message, data))) + b"\n"

    def forget(self, request_id: int) -> None:
        """A request this side gave up on: its late answer is ignored like any unmatched one."""
        self.pending.pop(request_id, None)

    # --- receiving ---

    def feed(self, chunk: bytes) -> list[Response | Incoming | Unreadable]:
        self._splitter.feed(chunk)
        return self._take()

    def close(self) -> list[Response | Incoming | Unreadable]:
        """The peer's end closed: a last line without a newline still counts."""
        self._splitter.close()
        return self._take()

    def _take(self) -> list[Response | Incoming | Unreadable]:
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
                    if self.strict:
                        envelopes.append(_unreadable(line))
                    else:
                        self.ignored += 1
        for envelope in envelopes:
            if isinstance(envelope, Unreadable):
                self._ready.append(envelope)
            else:
                self._route(envelope)

    def _on_skip(self) -> None:
        self._ready.append(Unreadable(INVALID_REQUEST, f"a message is over {self._splitter.limit} bytes; it was "
                                                       "skipped"))

    def _route(self, envelope: Envelope) -> None:
        if self.strict and envelope.jsonrpc != "2.0":
            self._ready.append(Unreadable(INVALID_REQUEST, NO_VERSION, _id_of(envelope.id)))
            return
        if envelope.method is not msgspec.UNSET:
            if envelope.is_notification:
                self._ready.append(Incoming(envelope.method, envelope.params))
            elif envelope.is_request:
                self._ready.append(Incoming(envelope.method, envelope.params, envelope.id))
            elif self.strict:
                self._ready.append(Incoming(envelope.method, envelope.params, None, answer=True))
            else:
                self.ignored += 1               # "id": null with a method: not a request
            return
        # A response: only to an id this side sent and has not seen answered.
        method = self.pending.pop(envelope.id, None) if isinstance(envelope.id, int) else None
        if method is None and self.strict:
            self._ready.append(Unreadable(INVALID_REQUEST, NO_METHOD, _id_of(envelope.id)))
            return
        if method is None:
            self.ignored += 1
            self.unmatched += 1
            return
        error = None
        if envelope.error is not msgspec.UNSET:
            try:
                error = _error.decode(envelope.error)
            except msgspec.DecodeError:
                error = RpcError(0, f"{self.peer} answered with an error of no known shape")
        result = None if envelope.result is msgspec.UNSET else envelope.result
        if error is None and result is None:
            error = RpcError(0, f"{self.peer} answered with neither a result nor an error")
        self._ready.append(Response(envelope.id, method, result, error))
