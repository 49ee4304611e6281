"""Longer runs over the agent output parsers and the agent option validators: arbitrary bytes and
arbitrary JSON events, cut into arbitrary chunks, never crash a parser, never produce a
non-string reply, and never let an over-long line through (see tests/test_agent_parsers.py)."""

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from scv.core.agents.options import check_model
from scv.core.errors import RefusedError
from scv.core.lines import LineSplitter
from workers.agents.parse_claude import ClaudeStreamParser
from workers.agents.parse_codex import CodexJsonParser
from workers.agents.parse_pi import PiJsonParser
from workers.agents.redact import redact

PARSERS = [ClaudeStreamParser, CodexJsonParser, PiJsonParser]
TYPES = ["result", "assistant", "system", "thread.started", "item.started", "item.completed", "turn.completed",
         "turn.failed", "error", "session", "message_end", "tool_execution_start", "tool_execution_end",
         "agent_end", "auto_retry_start"]
SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(["type", "text", "role", "content", "message", "item",
                                                         "usage", "error", "command", "changes", "toolName",
                                                         "args", "stopReason", "errorMessage", "result",
                                                         "is_error", "input_tokens", "session_id", "id"]),
                                        inner, max_size=5), max_leaves=20)
EVENTS = st.fixed_dictionaries({"type": st.sampled_from(TYPES)}, optional={
    key: VALUES for key in ("item", "message", "usage", "error", "result", "is_error", "stop_reason",
                            "session_id", "thread_id", "id", "toolName", "args", "errors", "api_error_status")})


def _feed(parser_class, data: bytes, chunk: int, limit: int = 64):
    progress = []
    parser = parser_class(progress.append)
    lengths = []
    def on_lines(run: bytes) -> None:
        lengths.extend(len(line) for line in run.split(b"\n"))
        parser.lines(run)
    splitter = LineSplitter(on_lines, limit=limit)
    for start in range(0, len(data), chunk):
        splitter.feed(data[start:start + chunk])
    splitter.close()
    report = parser.report
    assert report.reply is None or isinstance(report.reply, str)
    assert report.error is None or isinstance(report.error, str)
    assert report.vendor_session is None or isinstance(report.vendor_session, str)
    assert all(n <= limit for n in lengths)
    assert all(isinstance(line, str) for line in progress)


@given(st.sampled_from(PARSERS), st.binary(max_size=600), st.integers(min_value=1, max_value=50))
def parsers_survive_any_bytes(parser_class, data, chunk):
    _feed(parser_class, data, chunk)


@given(st.sampled_from(PARSERS), st.lists(EVENTS, max_size=12), st.integers(min_value=1, max_value=80))
def parsers_survive_any_events(parser_class, events, chunk):
    data = b"\n".join(json.dumps(event).encode() for event in events)
    _feed(parser_class, data, chunk, limit=1 << 20)


@given(st.text(max_size=400))
def redaction_is_one_bounded_line(text):
    out = redact(text)
    assert "\n" not in out and "\r" not in out and len(out) <= 200


@given(st.text(max_size=140))
def model_validator_matches_its_grammar(model):
    try:
        check_model(model)
        accepted = True
    except RefusedError:
        accepted = False
    assert accepted == bool(re.fullmatch(r"[A-Za-z0-9._:/@\[\]-]{1,128}", model) and model[0] not in "-@")


HARNESSES = [parsers_survive_any_bytes, parsers_survive_any_events, redaction_is_one_bounded_line,
             model_validator_matches_its_grammar]
