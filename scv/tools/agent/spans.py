"""The `invoke_agent {agent}` span of one delegated turn, a child of its `agent` tool-call span:
which agent on which transport, the conversation handle and turn, the status, usage and cost.
The delegated prompt and reply are text: on the span only with `[telemetry] content = true`."""

from typing import Any

from scv.config.load import Config
from scv.core.agents.descriptors import ACP, NESTED, RESUME
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


def end_agent(span: Span, value: dict[str, Any], config: Config) -> None:
    if not span.recording:
        return
    usage = value.get("usage") if isinstance(value.get("usage"), dict) else {}
    status = value.get("status")
    span.set({"gen_ai.conversation.id": value.get("session"), "scv.agent.turn": value.get("turn"),
              "scv.agent.status": status, "scv.agent.exit_code": value.get("exit_code"),
              **{f"gen_ai.usage.{key}": number for key, number in usage.items()
                 if isinstance(number, (int, float)) and not isinstance(number, bool) and key != "cost_usd"},
              "scv.cost_usd": usage.get("cost_usd", value.get("cost_usd"))})
    if config.telemetry.content and isinstance(value.get("reply"), str):
        span.set({"scv.reply": value["reply"]})
    span.end(None if status == "completed" else str(status))
