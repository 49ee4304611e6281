"""What a session's spans say: the GenAI semantic conventions for the model requests and tool
calls of a turn, and SCV's own keys (docs/tracing.md). Text (prompts, replies, arguments) goes
on a span only when the user's config sets `[telemetry] content = true`."""

from typing import Any

from scv.config.load import Config
from scv.providers.base import ModelReply, Provider, ToolCall, Usage
from scv.telemetry.spans import Span


def content_allowed(span: Span, config: Config) -> bool:
    return span.recording and config.telemetry.content


def turn_span(parent: Span, turn_id: str, prompt: str, config: Config) -> Span:
    span = parent.child("scv turn", {"scv.turn.id": turn_id})
    if content_allowed(span, config):
        span.set({"scv.prompt": prompt})
    return span


def end_turn(span: Span, status: str, reason: str, error: str, usage: Usage, reply: str, config: Config) -> None:
    if not span.recording:
        return
    span.set({"scv.turn.status": status, "scv.turn.reason": reason or None, **usage_attributes(usage)})
    if content_allowed(span, config) and reply:
        span.set({"scv.reply": reply})
    span.end(error or None)


def usage_attributes(usage: Usage) -> dict[str, int]:
    return {"gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens}


def model_span(parent: Span, provider: Provider) -> Span:
    if not parent.recording:
        return parent
    model = getattr(provider, "model", None) or provider.name
    return parent.child(f"chat {model}", {"gen_ai.operation.name": "chat", "gen_ai.system": provider.name,
                                          "gen_ai.request.model": model}, client=True)


def end_model(span: Span, reply: ModelReply, config: Config) -> None:
    if not span.recording:
        return
    span.set({**usage_attributes(reply.usage),
              "gen_ai.response.finish_reasons": ("tool_calls",) if reply.tool_calls else ("stop",)})
    if content_allowed(span, config) and reply.text:
        span.set({"scv.reply": reply.text})
    span.end()


def tool_span(parent: Span, call: ToolCall, config: Config) -> Span:
    return named_tool_span(parent, call.name, call.arguments, config, call.id)


def named_tool_span(parent: Span, name: str, arguments: str, config: Config, call_id: str | None = None) -> Span:
    """The `execute_tool` span of a call by name (`scv tool`'s has no model's call id)."""
    if not parent.recording:
        return parent
    # An MCP server's tool is a request to another service: the conventions' CLIENT span.
    span = parent.child(f"execute_tool {name}", {"gen_ai.operation.name": "execute_tool",
                                                  "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id},
                        client=name.startswith("mcp__"))
    if content_allowed(span, config):
        span.set({"scv.tool.arguments": arguments})
    return span


def end_tool(span: Span, ok: bool, value: dict[str, Any], approval: str | None) -> None:
    """`approval`: approved or denied (a person answered), auto (nobody was asked), None (the call
    was refused before anyone could be)."""
    if not span.recording:
        return
    if value.get("refused"):
        status = "refused"
    elif value.get("cancelled"):
        status = "cancelled"
    else:
        status = "completed" if ok else "failed"
    span.set({"scv.tool.status": status, "scv.tool.approval": approval})
    # The status word, not the error: a tool's sentence may quote its arguments.
    span.end(None if ok else status)
