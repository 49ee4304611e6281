"""pi `--mode json`: the first line is the `session`, the last assistant `message_end` holds the
reply and its usage, and a provider error is `stopReason:"error"` with `errorMessage` (exit 0).

pi retries some errors itself: `auto_retry_start` after `agent_end` means the turn goes on.
"""

from typing import Any

import msgspec

from scv.core.usage import REPORTED, as_cost
from workers.agents import rate_limits, verdict
from workers.agents.report import StreamParser, as_int, parts_of

FILE_TOOLS = {"read", "edit", "write", "ls", "find", "grep"}


class Message(msgspec.Struct, gc=False):
    role: Any = None
    content: msgspec.Raw = msgspec.Raw(b"null")    # decoded only for an assistant's message_end
    usage: Any = None
    stopReason: Any = None
    errorMessage: Any = None


class Event(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    message: Message | None = None
    toolName: Any = None
    args: Any = None
    isError: Any = None


def _tool_line(name: str, args: Any) -> str:
    args = args if isinstance(args, dict) else {}
    if name == "bash":
        return f"$ {args.get('command', '')}"
    if name in FILE_TOOLS:
        target = args.get("path") or args.get("file_path")
        return f"{name} {target}" if isinstance(target, str) and target.strip() else name
    return name


class PiJsonParser(StreamParser):
    Event = Event

    def __init__(self, on_progress=None, meter=None):
        super().__init__(on_progress, meter)
        self._input = self._output = self._cached = 0
        self._counted = False
        self._cost = 0.0
        self._costed = True     # until a message arrives without a cost

    def handle(self, event: Event) -> None:
        report = self.report
        kind = event.type
        if kind == "session" and isinstance(event.id, str) and report.vendor_session is None:
            report.vendor_session = event.id
        elif kind == "message_end" and event.message is not None and event.message.role == "assistant":
            self._assistant(event.message)
        elif kind == "tool_execution_start" and isinstance(event.toolName, str):
            self.progress(_tool_line(event.toolName, event.args))
        elif kind == "tool_execution_end" and isinstance(event.toolName, str) and event.isError is True:
            self.progress(f"{event.toolName} failed")
        elif kind in ("agent_end", "auto_retry_end"):
            report.finished = True
        elif kind == "auto_retry_start":
            report.finished = False

    def _assistant(self, message: Message) -> None:
        report = self.report
        usage = message.usage if isinstance(message.usage, dict) else {}
        ledger = report.usage
        ledger.turns += 1
        for name, key in (("_input", "input"), ("_output", "output"), ("_cached", "cacheRead")):
            value = as_int(usage.get(key))
            if value is not None:
                setattr(self, name, getattr(self, name) + value)
                self._counted = True
        if self._counted:
            ledger.input_tokens, ledger.output_tokens = self._input, self._output
            ledger.cached_input_tokens = self._cached
        cost = usage.get("cost")
        cost = as_cost(cost.get("total")) if isinstance(cost, dict) else None
        self._costed = self._costed and cost is not None
        if self._costed:
            self._cost += cost
            ledger.cost_usd, ledger.cost_source = self._cost, REPORTED
        else:
            ledger.cost_usd = ledger.cost_source = None
        self.counted()
        texts = [p.text for p in parts_of(message.content) if p.type == "text" and isinstance(p.text, str)]
        if message.stopReason == "error":
            error = message.errorMessage if isinstance(message.errorMessage, str) else "pi reported a provider error"
            report.error = error
            report.error_kind = verdict.classify(error)
            report.rate_limit = rate_limits.from_text(error)
            return
        if message.stopReason == "refusal":
            report.refusal = True
        report.error = report.error_kind = report.rate_limit = None
        if texts:
            report.reply = "".join(texts)
        elif message.stopReason != "toolUse":
            report.reply = report.reply if report.reply is not None else ""
