"""The offline provider: a JSONL script of the model's turns, so SCV runs with no endpoint.

Each line is one model response: `{"text": "...", "calls": [{"id": "readme", "tool": "read",
"args": {"path": "README.md"}}]}`. A line with calls asks for those tool calls; a line without
calls is the final reply and ends the turn. Blank lines and lines starting with `#` are skipped.
`args` may also be a string, passed to the tool as the model's raw JSON text.

Strings in `text` and `args` may name earlier results: `{{readme.content}}` is the `content`
field of the result of the call with id `readme` (`{{readme.ok}}`, `{{readme.error}}`, ...;
a field the result lacks renders as `(no FIELD: ERROR)`), and `{{run.utc}}` is the time the
script was loaded, as 20260102T030405Z. References are checked when the file is loaded.
"""

import re
import time
from pathlib import Path
from typing import Any

import msgspec

from scv.core.cancellation import Cancellation
from scv.core.errors import UsageError
from scv.core.input_files import read_bounded
from scv.providers.base import ModelReply, ModelRequest, Provider, ProviderError, TextSink, ToolCall, ToolOutput

MAX_SCRIPT_BYTES = 16 * 1024 * 1024
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)\s*\}\}")
CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ScriptCall(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    tool: str
    args: dict[str, Any] | str = {}
    id: str | None = None


class ScriptTurn(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    text: str = ""
    calls: list[ScriptCall] = []


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def load_script(path: Path) -> list[tuple[int, ScriptTurn]]:
    """The script's model responses with their line numbers; a broken file is a UsageError."""
    data = read_bounded(path, MAX_SCRIPT_BYTES, "script", "an existing JSONL file")
    turns: list[tuple[int, ScriptTurn]] = []
    known: set[str] = set()
    for number, raw in enumerate(data.split(b"\n"), 1):
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        try:
            turn = msgspec.json.decode(line, type=ScriptTurn)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise UsageError(f"script {path} line {number} is not a model turn ({exc}); write one JSON object "
                             "with \"text\" and optional \"calls\" (see examples/)") from None
        for text in [turn.text, *(s for call in turn.calls for s in _strings(call.args))]:
            for ref, _field in PLACEHOLDER.findall(text):
                if ref != "run" and ref not in known:
                    raise UsageError(f"script {path} line {number} refers to {{{{{ref}.…}}}}, but no earlier call "
                                     f"has the id {ref!r}; give that call \"id\": \"{ref}\" on an earlier line")
        for call in turn.calls:
            if call.id is not None:
                if not CALL_ID.match(call.id):
                    raise UsageError(f"script {path} line {number}: call id {call.id!r} must be 1-64 letters, "
                                     "digits, '_' or '-'")
                if call.id in known:
                    raise UsageError(f"script {path} line {number}: call id {call.id!r} is used twice; "
                                     "give each call its own id")
                known.add(call.id)
        turns.append((number, turn))
    if not turns:
        raise UsageError(f"script {path} has no model turns; add at least one line such as {{\"text\": \"done\"}}")
    if turns[-1][1].calls:
        raise UsageError(f"script {path} ends with tool calls (line {turns[-1][0]}); end it with a final reply line "
                         "without \"calls\"")
    return turns


class ScriptProvider(Provider):
    def __init__(self, path: Path):
        self.path = path
        self.name = "script"
        self.model = f"script:{path.name}"
        self._turns = load_script(path)
        self._next = 0
        self._run = {"utc": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())}

    def complete(self, request: ModelRequest, *, on_text: TextSink, cancel: Cancellation) -> ModelReply:
        if self._next >= len(self._turns):
            raise ProviderError(f"script {self.path} has no more model turns (all {len(self._turns)} were used); "
                                "add lines for this turn")
        number, turn = self._turns[self._next]
        self._next += 1
        results = self._results(request)

        def render(text: str) -> str:
            return PLACEHOLDER.sub(lambda m: self._field(results, m.group(1), m.group(2)), text)

        calls = []
        for index, call in enumerate(turn.calls):
            if isinstance(call.args, str):
                arguments = render(call.args)
            else:
                arguments = msgspec.json.encode(_render_all(call.args, render)).decode()
            calls.append(ToolCall(id=call.id or f"line{number}_{index}", name=call.tool, arguments=arguments))
        text = render(turn.text)
        if text:
            on_text(text)
        return ModelReply(text=text, tool_calls=tuple(calls))

    @staticmethod
    def _results(request: ModelRequest) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for item in request.history:
            if isinstance(item, ToolOutput):
                try:
                    value = msgspec.json.decode(item.output)
                except msgspec.DecodeError:
                    value = {"output": item.output}
                found[item.call_id] = value if isinstance(value, dict) else {"value": value}
        return found

    def _field(self, results: dict[str, dict[str, Any]], ref: str, field: str) -> str:
        if ref == "run":
            return self._run.get(field, f"(no run.{field})")
        result = results.get(ref)
        if result is None:
            return f"(no result for {ref})"
        if field not in result:
            return f"(no {field}: {result.get('error', 'the result has no such field')})"
        value = result[field]
        return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _render_all(value: Any, render) -> Any:
    if isinstance(value, str):
        return render(value)
    if isinstance(value, dict):
        return {key: _render_all(item, render) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_all(item, render) for item in value]
    return value
