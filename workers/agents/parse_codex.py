"""Codex `exec --json`: the last `agent_message` item is the reply, `turn.completed` has usage,
`turn.failed` or a top-level `error` is a failure, and `thread.started` reports the thread.

`error` lines reading `Reconnecting...` are retries and `error` items are warnings, not failures.
"""

from typing import Any

import msgspec

from workers.agents import rate_limits, verdict
from workers.agents.report import Limited, StreamParser, take_tokens


class Item(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    command: Any = None
    exit_code: Any = None
    status: Any = None
    changes: Any = None
    query: Any = None
    action: Any = None


class ErrorBody(msgspec.Struct, gc=False):
    message: Any = None


class Usage(msgspec.Struct, gc=False):
    # Untyped: a count of another type drops that count, never the turn's final event.
    input_tokens: Any = None
    output_tokens: Any = None
    cached_input_tokens: Any = None


class Event(msgspec.Struct, gc=False):
    type: str = ""
    thread_id: Any = None
    item: Item | None = None
    usage: Usage | None = None
    message: Any = None
    error: ErrorBody | None = None


def _search_query(item: Item) -> str:
    if isinstance(item.query, str):
        return item.query
    if isinstance(item.action, dict) and isinstance(item.action.get("query"), str):
        return item.action["query"]
    return ""


class CodexJsonParser(StreamParser):
    Event = Event

    def lines(self, run: bytes) -> None:
        if self.report.limited:
            return
        try:
            events = self._decoder.decode_lines(run)
        except msgspec.DecodeError:
            super().lines(run)      # line by line: one of them is not JSON
            return
        self.report.json_lines += len(events)
        try:
            self._events(events)
        except Limited:
            return      # the rest of the stream is not read: the run is being stopped

    def handle(self, event: Event) -> None:
        self._events((event,))

    def _events(self, events) -> None:
        # One loop with the common cases inline: Codex prints many small events (a worst-case
        # stream of captured runs has about ten per KiB), and a call per event halves the speed.
        report = self.report
        # Codex reports tokens only with turn.completed: mid-turn, only a turn limit can be reached.
        turns_cap = self.meter.limits.max_turns if self.meter.on and self.meter.limits.max_turns else 1 << 62
        for event in events:
            kind, item = event.type, event.item
            if kind == "item.completed":
                if item is None:
                    continue
                if item.type != "reasoning" and item.type != "error":
                    report.usage.turns += 1
                    if report.usage.turns >= turns_cap:
                        self.counted()
                if item.type == "agent_message":
                    if isinstance(item.text, str):
                        report.reply = item.text
                elif item.type == "command_execution":
                    if isinstance(item.exit_code, int) and item.exit_code != 0 and isinstance(item.command, str):
                        self.progress(f"exit {item.exit_code}: {item.command}")
                elif item.type == "file_change" and isinstance(item.changes, list):
                    for change in item.changes:
                        if isinstance(change, dict):
                            self.progress(f"{change.get('kind', 'change')} {change.get('path', '')}")
            elif kind == "item.started":
                if item is None:
                    continue
                if item.type == "command_execution":
                    if isinstance(item.command, str):
                        self.progress(f"$ {item.command}")
                elif item.type == "web_search":
                    self.progress(f"search: {_search_query(item)}")
            elif kind == "thread.started":
                if isinstance(event.thread_id, str):
                    report.vendor_session = event.thread_id
            elif kind == "turn.completed":
                self._completed(event)
            elif kind == "turn.failed":
                self._failed(event)
            elif kind == "error":
                self._error(event)

    def _completed(self, event: Event) -> None:
        self.report.finished = True
        usage = event.usage
        if usage is not None:
            ledger = self.report.usage
            take_tokens(ledger, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
            # Codex's input_tokens includes the cached part; the ledger counts it apart.
            if ledger.input_tokens is not None and ledger.cached_input_tokens is not None \
                    and ledger.cached_input_tokens <= ledger.input_tokens:
                ledger.input_tokens -= ledger.cached_input_tokens

    def _failed(self, event: Event) -> None:
        self.report.finished = True
        message = event.error.message if event.error is not None else None
        self._fail(message if isinstance(message, str) else "Codex reported that the turn failed")

    def _error(self, event: Event) -> None:
        if isinstance(event.message, str) and not event.message.startswith("Reconnecting"):
            self._fail(event.message)

    def _fail(self, message: str) -> None:
        self.report.error = message
        self.report.error_kind = verdict.classify(message)
        self.report.rate_limit = rate_limits.from_text(message)
