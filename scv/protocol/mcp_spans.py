"""What `scv mcp`'s spans say (docs/tracing.md): the OpenTelemetry conventions for MCP servers
(`mcp.method.name`, the span name `tools/call {tool}`, kind SERVER, the host's span from the
request's `_meta.traceparent` as parent, `error.type` = `tool_error` when the answer has
`isError`), on the one span that is also the call's GenAI `execute_tool` span (the conventions
say to add the MCP keys to it rather than open a second one), with SCV's own tool keys."""

from typing import Any

import msgspec

from scv.config.load import Config
from scv.core.traceparent import from_meta
from scv.session import spans
from scv.telemetry.spans import Span

TRANSPORT = {"network.transport": "pipe"}       # stdio: the conventions' word for it


def call_span(connection: Span, name: str, request_id: Any, meta: dict[str, Any] | None, version: str,
              arguments: dict[str, Any] | None, config: Config) -> Span:
    """The span of one `tools/call`: a child of the host's span when the request names one in
    `_meta`, else of the connection's run."""
    if not connection.recording:
        return connection
    span = connection.remote(from_meta(meta)).child(
        f"tools/call {name}", {"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
                               "gen_ai.tool.name": name, "jsonrpc.request.id": str(request_id),
                               "mcp.protocol.version": version or None, **TRANSPORT}, server=True)
    if spans.content_allowed(span, config):
        span.set({"scv.tool.arguments": msgspec.json.encode(arguments or {}).decode()})
    return span


def end_call(span: Span, failed: bool, value: dict[str, Any], approval: str | None) -> None:
    """`failed`: the answer has `isError`. `approval` as spans.end_tool takes it."""
    if not span.recording:
        return
    if failed:
        span.set({"error.type": "tool_error"})
    spans.end_tool(span, not failed, value, approval)
