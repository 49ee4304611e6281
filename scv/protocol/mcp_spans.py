"""What `scv mcp`'s spans say (docs/tracing.md): the OpenTelemetry conventions for MCP servers
(`mcp.method.name`, the span names `initialize`, `tools/list` and `tools/call {tool}`, kind
SERVER, the host's span from the request's `_meta.traceparent` as parent with a link to the
connection, `error.type` = `tool_error` when the answer has `isError`). A tool call's span is
also the call's GenAI `execute_tool` span (the conventions say to add the MCP keys to it rather
than open a second one), with SCV's own tool keys."""

from typing import Any

import msgspec

from scv.config.load import Config
from scv.core import jsonrpc
from scv.core.traceparent import from_meta
from scv.session import spans
from scv.telemetry.spans import Span

TRANSPORT = {"network.transport": "pipe"}       # stdio: the conventions' word for it


def request_span(connection: Span, method: str, request_id: Any, params: msgspec.Raw | None, version: str) -> Span:
    """The SERVER span `{method}` of a request without a target (`initialize`, `tools/list`),
    under the host's span when its params' `_meta` names one, else under the connection's run."""
    if not connection.recording:
        return connection
    try:
        raw = jsonrpc.decode_as(params, dict[str, Any] | None)
    except jsonrpc.WireError:       # the handler answers a malformed request; its span is still kept
        raw = None
    return _server_span(connection, method, method, request_id, (raw or {}).get("_meta"), version, {})


def end_request(span: Span, code: int | None = None, message: str | None = None) -> None:
    """`code`: the JSON-RPC error the request was answered with (None: it succeeded)."""
    if code is not None and span.recording:
        span.set({"error.type": str(code), "rpc.response.status_code": str(code)})
    span.end(message if code is not None else None)


def call_span(connection: Span, name: str, request_id: Any, meta: dict[str, Any] | None, version: str,
              arguments: dict[str, Any] | None, config: Config) -> Span:
    """The span of one `tools/call`: a child of the host's span when the request names one in
    `_meta`, else of the connection's run."""
    if not connection.recording:
        return connection
    span = _server_span(connection, "tools/call", f"tools/call {name}", request_id, meta, version,
                        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name})
    if spans.content_allowed(span, config):
        span.set({"scv.tool.arguments": msgspec.json.encode(arguments or {}).decode()})
    return span


def _server_span(connection: Span, method: str, name: str, request_id: Any, meta: Any, version: str,
                 attributes: dict[str, Any]) -> Span:
    """A request's span. Under the host's span from `_meta`, it links the connection's run (the
    conventions' "link the ambient context"), which then still shows every call it served."""
    host = from_meta(meta)
    own = connection.context
    links = (own,) if host is not None and own is not None else ()
    return connection.remote(host).child(name, {"mcp.method.name": method, "jsonrpc.request.id": str(request_id),
                                                "mcp.protocol.version": version or None, **TRANSPORT, **attributes},
                                         server=True, links=links)


def end_call(span: Span, failed: bool, value: dict[str, Any], approval: str | None) -> None:
    """`failed`: the answer has `isError`. `approval` as spans.end_tool takes it."""
    if not span.recording:
        return
    if failed:
        span.set({"error.type": "tool_error"})
    spans.end_tool(span, not failed, value, approval)
