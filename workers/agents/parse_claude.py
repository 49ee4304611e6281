"""Claude Code `--output-format stream-json --verbose`: the `result` event carries the reply,
`is_error`, `stop_reason` and usage; `system/init` reports the session.

Failures also end with `subtype:"success"`: only `is_error` (and exit 1) marks them. A signed-out
run is a normal-looking stream whose result reads `Not logged in · Please run /login`.
"""

from typing import Any

import msgspec

from scv.core.usage import REPORTED, as_cost, as_count
from workers.agents import rate_limits, verdict
from workers.agents.report import SIGNIN, StreamParser, as_int, first_line, parts_of, take_tokens

FILE_TOOLS = {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead"}
_SYNTHETIC_KINDS = {"authentication_failed": SIGNIN, "rate_limit": "quota", "server_error": "http",
                    "overloaded_error": "http", "billing_error": "quota"}


class Message(msgspec.Struct, gc=False):
    content: msgspec.Raw = msgspec.Raw(b"null")    # decoded only for the parts progress needs
    model: Any = None
    id: Any = None          # one model response: a tool turn prints its parts under one id
    usage: Any = None       # this response's tokens so far (the result's usage is the turn's, later)


class Event(msgspec.Struct, gc=False):
    type: Any = None
    subtype: Any = None
    session_id: Any = None
    result: Any = None
    is_error: Any = None
    stop_reason: Any = None
    usage: Any = None
    total_cost_usd: Any = None
    api_error_status: Any = None
    errors: Any = None
    error: Any = None
    message: Message | None = None
    rate_limit_info: Any = None


def _tool_line(name: str, tool_input: Any) -> str:
    args = tool_input if isinstance(tool_input, dict) else {}
    if name == "Bash":
        return f"$ {args.get('command', '')}"
    if name in FILE_TOOLS:
        target = args.get("file_path") or args.get("notebook_path") or args.get("path") or ""
        return f"{name} {target}".strip()
    if name == "WebSearch":
        return f"search: {args.get('query', '')}"
    if name == "WebFetch":
        return f"fetch {args.get('url', '')}"
    return name             # the spec: the tool name otherwise (a Grep pattern is not a file)


class ClaudeStreamParser(StreamParser):
    Event = Event

    def __init__(self, on_progress=None, meter=None):
        super().__init__(on_progress, meter)
        self._synthetic_kind: str | None = None
        self._last_message: Any = None
        self._seen: tuple[int, int, int] = (0, 0, 0)    # the current message's counts already added

    def handle(self, event: Event) -> None:
        report = self.report
        if isinstance(event.session_id, str) and report.vendor_session is None and event.type in ("system", "result"):
            report.vendor_session = event.session_id
        if event.type == "assistant" and event.message is not None:
            if isinstance(event.error, str):
                self._synthetic_kind = _SYNTHETIC_KINDS.get(event.error, self._synthetic_kind)
            if event.message.model == "<synthetic>":
                return
            if event.message.id is None or event.message.id != self._last_message:
                self._last_message = event.message.id
                report.usage.turns += 1
                self._seen = (0, 0, 0)
            if isinstance(event.message.usage, dict):
                self._message_usage(event.message.usage)
            self.counted()
            for part in parts_of(event.message.content):
                if part.type == "tool_use" and isinstance(part.name, str):
                    self.progress(_tool_line(part.name, part.input))
                elif part.type == "text":
                    self.progress(first_line(part.text))
        elif event.type == "result":
            self._result(event)
        elif event.type == "rate_limit_event":
            # Informational unless `rejected`: then the turn's failure is the account's limit.
            report.rate_limit = rate_limits.from_claude(event.rate_limit_info) or report.rate_limit

    def _message_usage(self, usage: dict) -> None:
        """Each response's latest counts, summed as they arrive, so a token limit holds mid-turn."""
        now = tuple(as_count(usage.get(k)) or 0 for k in ("input_tokens", "cache_read_input_tokens", "output_tokens"))
        ledger, before = self.report.usage, self._seen
        ledger.input_tokens = (ledger.input_tokens or 0) + now[0] - before[0]
        ledger.cached_input_tokens = (ledger.cached_input_tokens or 0) + now[1] - before[1]
        ledger.output_tokens = (ledger.output_tokens or 0) + now[2] - before[2]
        self._seen = now

    def _result(self, event: Event) -> None:
        report = self.report
        report.finished = True
        usage = event.usage if isinstance(event.usage, dict) else {}
        take_tokens(report.usage, usage.get("input_tokens"), usage.get("output_tokens"),
                    usage.get("cache_read_input_tokens"))
        cost = as_cost(event.total_cost_usd)
        if cost is not None:
            report.usage.cost_usd, report.usage.cost_source = cost, REPORTED
        text = event.result if isinstance(event.result, str) else None
        if event.stop_reason == "refusal":
            report.refusal = True
            report.reply = text
            return
        if event.is_error is True or (event.subtype not in (None, "success")):
            errors = [e for e in event.errors if isinstance(e, str)] if isinstance(event.errors, list) else []
            report.error = text or "; ".join(errors) or f"Claude Code reported an error ({event.subtype})"
            status = as_int(event.api_error_status)
            report.rate_limit = report.rate_limit or rate_limits.for_status(status) or rate_limits.from_text(report.error)
            report.error_kind = (verdict.classify(None, status) or self._synthetic_kind
                                 or verdict.classify(report.error))
            return
        report.reply = text if text is not None else report.reply
        report.error = None
