"""Longer runs over the ACP wire (workers/live/acp_wire.py) and what the ACP turn makes of it:
any bytes, and any JSON-RPC-shaped messages with unknown methods, fields, ids and
`session/update` variants, cut into arbitrary chunks, decode the same as in one piece, never
raise, never answer an id this side did not send, and never let an over-long line through."""

import json

from hypothesis import example, given
from hypothesis import strategies as st

from workers.live import acp_turn
from workers.live.acp_wire import (Incoming, PermissionParams, Response, Wire, WireError, decode_as, decode_update)

METHODS = ["session/update", "session/request_permission", "fs/read_text_file", "terminal/create", "zzz/other",
           "_meta/x", ""]
UPDATES = ["agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", "usage_update",
           "available_commands_update", "config_option_update", "current_mode_update", "brand_new", ""]
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
KEYS = st.sampled_from(["content", "text", "type", "title", "kind", "status", "toolCallId", "entries", "options",
                        "optionId", "locations", "path", "configOptions", "currentModeId", "sessionId", "x"])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
                      max_leaves=16)
UPDATE = st.fixed_dictionaries({"sessionUpdate": st.sampled_from(UPDATES)},
                               optional={k: VALUES for k in ("content", "title", "kind", "status", "toolCallId",
                                                             "entries", "configOptions")})
PARAMS = st.fixed_dictionaries({}, optional={"sessionId": VALUES, "update": UPDATE | VALUES, "toolCall": VALUES,
                                             "options": VALUES, "zzz": VALUES}) | VALUES
IDS = st.integers(min_value=-2, max_value=6) | st.text(max_size=4) | st.none() | st.floats(allow_nan=False)
MESSAGES = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0"]), "id": IDS, "method": st.sampled_from(METHODS) | st.integers(),
    "params": PARAMS, "result": VALUES, "error": VALUES | st.fixed_dictionaries({"code": st.integers(),
                                                                                "message": st.text(max_size=8)})})


def stream_of(messages: list, garbage: list[bytes]) -> bytes:
    lines = [json.dumps(m).encode() for m in messages] + garbage
    return b"\n".join(lines) + b"\n"


def _decode(data: bytes, cuts: list[int], sent: int, limit: int):
    wire = Wire(limit=limit)
    for _ in range(sent):
        wire.request("session/prompt", None)
    points = sorted({min(c, len(data)) for c in cuts})
    chunks, start = [], 0
    for point in points:
        chunks.append(data[start:point])
        start = point
    chunks.append(data[start:])
    out = []
    for chunk in chunks:
        out.extend(wire.feed(chunk))
    out.extend(wire.close())
    return out, wire


def _summary(messages) -> list:
    return [(type(m).__name__, m.id, getattr(m, "method", None)) for m in messages]


@given(st.lists(MESSAGES, max_size=12), st.lists(st.binary(max_size=12).filter(lambda b: b"\n" not in b), max_size=3),
       st.lists(st.integers(min_value=0, max_value=2000), max_size=6), st.integers(min_value=0, max_value=4))
def wire_decoding_is_total_and_split_anywhere_decodes_the_same(messages, garbage, cuts, sent):
    data = stream_of(messages, garbage)
    whole, _ = _decode(data, [], sent, 1 << 20)
    split, _ = _decode(data, cuts, sent, 1 << 20)
    assert _summary(whole) == _summary(split)
    answered = [m.id for m in whole if isinstance(m, Response)]
    assert len(answered) == len(set(answered)) and all(isinstance(i, int) and 0 <= i < sent for i in answered)
    for message in whole:
        if isinstance(message, Incoming):
            assert isinstance(message.method, str)
            if message.method == "session/update":
                decode_update(message.params)           # None or a known variant, never an exception
            elif message.method == "session/request_permission":
                try:
                    params = decode_as(message.params, PermissionParams)
                except WireError:
                    continue
                assert acp_turn.risk_of(params) in ("read_only", "filesystem", "process", "network", "delegate")
                summary = acp_turn.summary_of("claude-1", params)
                assert summary.startswith("[claude-1 acp] ") and "\n" not in summary
                acp_turn.choose_option(params.options, True)


@given(st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=8), st.integers(min_value=1, max_value=64))
def over_long_lines_are_skipped_and_the_rest_still_decodes(sizes, limit):
    lines = [json.dumps({"jsonrpc": "2.0", "method": "n", "params": {"p": "x" * size}}).encode() for size in sizes]
    data = b"\n".join(lines) + b"\n"
    out, wire = _decode(data, [7, 70, 700], 0, limit)
    kept = [line for line in lines if len(line) <= limit]
    assert len(out) == len(kept) and wire.skipped == len(lines) - len(kept)


@given(st.lists(UPDATE, max_size=10), st.integers(min_value=16, max_value=400))
@example([{"sessionUpdate": "tool_call", "kind": ""}], 16)       # a blank kind once made an empty line
def a_turn_never_raises_and_keeps_its_reply_and_lines_bounded(updates, limit):
    lines = []
    state = acp_turn.TurnState(limit, lines.append)
    for raw in updates:
        update = decode_update(json.dumps({"update": raw}).encode())
        if update is not None:
            state.on_update(update)
    state.finish()
    assert len(state.reply().encode("utf-8", "surrogatepass")) <= limit + 4
    assert all(isinstance(line, str) and line.strip() for line in lines)


HARNESSES = [wire_decoding_is_total_and_split_anywhere_decodes_the_same,
             over_long_lines_are_skipped_and_the_rest_still_decodes,
             a_turn_never_raises_and_keeps_its_reply_and_lines_bounded]
