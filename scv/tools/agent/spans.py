"""The `invoke_agent {agent}` span of one delegated turn, a child of its `agent` tool-call span:
which agent on which transport, the conversation handle and turn, the status, usage and cost.
The delegated prompt and reply are text: on the span only with `[telemetry] content = true`."""

from typing import Any

import msgspec

from scv.config.load import Config
from scv.core.agents.descriptors import ACP, NESTED, RESUME
from scv.core.usage import Usage
from scv.telemetry.spans import Span
from scv.tools.agent.backend import AgentCall

TRANSPORTS = {RESUME: "cli", ACP: "acp", NESTED: "nested"}


def agent_span(parent: Span, call: AgentCall, config: Config) -> Span:
    if not parent.recording:
        return parent
    span = parent.child(f"invoke_agent {call.name}", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": call.name,
        "scv.agent.transport": TRANSPORTS.get(call.backend.transport, call.backend.transport),
        "gen_ai.request.model": call.model, "scv.agent.effort": call.effort})
    if config.telemetry.content:
        span.set({"scv.agent.prompt": call.prompt})
    return span


def usage_attributes(raw: Any) -> dict[str, Any]:
    """A result's usage (the ledger's shape, scv/core/usage.py) in the GenAI conventions' keys,
    whose input count includes cached input (the ledger's excludes it), and SCV's own: the
    model rounds, and the cost with where it came from. What the agent did not report is left
    out: tokens go on the span when the cost is unknown, and a cost without tokens too."""
    try:
        usage = msgspec.convert(raw, Usage)
    except msgspec.ValidationError:     # no usage, or not the ledger's: nothing to say
        return {}
    input_tokens = usage.input_tokens
    if usage.cached_input_tokens is not None:
        input_tokens = (input_tokens or 0) + usage.cached_input_tokens
    return {"gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens, "scv.usage.turns": usage.turns,
            "scv.cost_usd": usage.cost_usd, "scv.cost_source": usage.cost_source}


def end_agent(span: Span, value: dict[str, Any], config: Config) -> None:
    if not span.recording:
        return
    status = value.get("status")
    span.set({"gen_ai.conversation.id": value.get("session"), "scv.agent.turn": value.get("turn"),
              "scv.agent.status": status, "scv.agent.exit_code": value.get("exit_code"),
              **usage_attributes(value.get("usage"))})
    if config.telemetry.content and isinstance(value.get("reply"), str):
        span.set({"scv.reply": value["reply"]})
    span.end(None if status == "completed" else str(status))
