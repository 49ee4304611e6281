"""Codex `exec --json`: the last `agent_message` item is the reply, `turn.completed` has usage,
`turn.failed` or a top-level `error` is a failure, and `thread.started` reports the thread.

`error` lines reading `Reconnecting...` are retries and `error` items are warnings, not failures.
"""

from typing import Any

import msgspec

from workers.agents import verdict
from workers.agents.report import StreamParser, usage_of


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

    def __init__(self, on_progress=None):
        super().__init__(on_progress)
        # Codex prints many small events: one lookup per event instead of a chain of comparisons.
        self._dispatch = {"thread.started": self._thread, "item.started": self._item_started,
                          "item.completed": self._item_completed, "turn.completed": self._completed,
                          "turn.failed": self._failed, "error": self._error}

    def lines(self, run: bytes) -> None:
        # The base class's loop with the dispatch inlined: Codex events are many and small.
        try:
            events = self._decoder.decode_lines(run)
        except msgspec.DecodeError:
            super().lines(run)
            return
        self.report.json_lines += len(events)
        dispatch = self._dispatch
        for event in events:
            action = dispatch.get(event.type)
            if action is not None:
                action(event)

    def handle(self, event: Event) -> None:
        action = self._dispatch.get(event.type)
        if action is not None:
            action(event)

    def _thread(self, event: Event) -> None:
        if isinstance(event.thread_id, str):
            self.report.vendor_session = event.thread_id

    def _item_started(self, event: Event) -> None:
        if event.item is not None and event.item.type != "agent_message":
            self._item("item.started", event.item)

    def _item_completed(self, event: Event) -> None:
        if event.item is not None:
            self._item("item.completed", event.item)

    def _completed(self, event: Event) -> None:
        self.report.finished = True
        usage = event.usage
        if usage is not None:
            self.report.usage = usage_of(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)

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

    def _item(self, phase: str, item: Item) -> None:
        if item.type == "agent_message" and phase == "item.completed" and isinstance(item.text, str):
            self.report.reply = item.text
        elif item.type == "command_execution" and isinstance(item.command, str):
            if phase == "item.started":
                self.progress(f"$ {item.command}")
            elif isinstance(item.exit_code, int) and item.exit_code != 0:
                self.progress(f"exit {item.exit_code}: {item.command}")
        elif item.type == "file_change" and phase == "item.completed" and isinstance(item.changes, list):
            for change in item.changes:
                if isinstance(change, dict):
                    self.progress(f"{change.get('kind', 'change')} {change.get('path', '')}")
        elif item.type == "web_search" and phase == "item.started":
            self.progress(f"search: {_search_query(item)}")
