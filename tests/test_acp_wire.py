"""The ACP wire: what SCV sends byte for byte, ids numbered per direction, responses matched only
to this side's requests, lines up to 50 MiB, and nothing the agent sends ending the connection;
then the fuzz harnesses' properties (fuzz/fuzz_acp_wire.py) for a short run."""

import json

import msgspec
from hypothesis import settings

from fuzz import fuzz_acp_wire
from workers.live import acp_wire as w


def lines(wire: w.Wire) -> list[dict]:
    return [json.loads(line) for line in bytes(wire.out).splitlines()]


def test_what_scv_sends_is_camel_case_json_rpc_one_object_a_line():
    wire = w.Wire()
    wire.request("initialize", w.InitializeParams(1, w.ClientCapabilities(), w.ClientInfo("scv", "1")))
    wire.request("session/new", w.NewSessionParams("/ws"))
    wire.request("session/prompt", w.PromptParams("s-1", [w.TextBlock("hi")]))
    wire.notify("session/cancel", w.CancelParams("s-1"))
    wire.respond(0, w.PermissionResult(w.SelectedOutcome("allow")))
    wire.respond("uuid-1", w.PermissionResult(w.CancelledOutcome()))
    wire.respond_error(5, w.METHOD_NOT_FOUND, "Method not found")
    assert bytes(wire.out).count(b"\n") == 7 and bytes(wire.out).endswith(b"\n")
    assert lines(wire) == [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                         "terminal": False},
            "clientInfo": {"name": "scv", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/ws", "mcpServers": []}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
         "params": {"sessionId": "s-1", "prompt": [{"type": "text", "text": "hi"}]}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-1"}},
        {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}},
        {"jsonrpc": "2.0", "id": "uuid-1", "result": {"outcome": {"outcome": "cancelled"}}},
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}},
    ]


def test_both_sides_may_use_id_0_at_once():
    wire = w.Wire()
    ours = wire.request("session/prompt", w.PromptParams("s", [w.TextBlock("x")]))
    assert ours == 0
    got = wire.feed(b'{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"toolCall":{}}}\n'
                    b'{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}\n')
    request, response = got
    assert isinstance(request, w.Incoming) and request.id == 0 and request.method == "session/request_permission"
    assert isinstance(response, w.Response) and response.id == 0 and response.method == "session/prompt"
    assert w.decode_as(response.result, w.PromptResult).stop_reason == "end_turn"


def test_only_this_sides_unanswered_ids_are_answers():
    wire = w.Wire()
    wire.request("a", None)
    got = wire.feed(b'{"jsonrpc":"2.0","id":7,"result":{}}\n{"jsonrpc":"2.0","id":"0","result":{}}\n'
                    b'{"jsonrpc":"2.0","id":0,"result":{}}\n{"jsonrpc":"2.0","id":0,"result":{}}\n')
    assert [(m.id, m.method) for m in got] == [(0, "a")]
    assert wire.ignored == 3 and wire.pending == {}


def test_errors_keep_the_agents_own_words():
    wire = w.Wire()
    wire.request("session/prompt", None)
    wire.request("session/set_mode", None)
    wire.request("x", None)
    got = wire.feed(b'{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"Authentication required"}}\n'
                    b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"details":'
                    b'"Cannot set permission mode"}}}\n{"jsonrpc":"2.0","id":2,"error":"odd"}\n')
    assert got[0].error.code == w.AUTH_REQUIRED and got[0].error.text() == "Authentication required"
    assert got[1].error.text() == "Internal error: Cannot set permission mode"
    assert got[2].error is not None and got[2].result is None


def test_unknown_variants_fields_notifications_and_garbage_never_end_the_connection():
    wire = w.Wire()
    wire.request("session/prompt", None)
    stream = (b'not json at all\n[1,2]\n{"jsonrpc":"2.0","method":"zzz/notice","params":{"a":1}}\n'
              b'{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"new_kind"}}}\n'
              b'{"jsonrpc":"2.0","method":"session/update","params":{"extra":1,"update":{"sessionUpdate":'
              b'"agent_message_chunk","content":{"type":"text","text":"ok","more":{}}}}}\n'
              b'{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn","usage":{"inputTokens":1,"x":2}}}')
    got = wire.feed(stream) + wire.close()
    assert [type(m).__name__ for m in got] == ["Incoming", "Incoming", "Incoming", "Response"]
    assert w.decode_update(got[1].params) is None
    chunk = w.decode_update(got[2].params)
    assert isinstance(chunk, w.MessageChunk) and chunk.content.text == "ok"
    assert w.decode_as(got[3].result, w.PromptResult).usage.input_tokens == 1


def test_lines_up_to_50_mib_are_read_and_longer_ones_skipped():
    wire = w.Wire()
    head = b'{"jsonrpc":"2.0","method":"n","params":{"p":"'
    tail = b'"}}'
    fits = head + b"x" * (w.MAX_LINE_BYTES - len(head) - len(tail)) + tail
    too_long = head + b"y" * (w.MAX_LINE_BYTES + 1) + tail
    got = []
    for data in (fits, b"\n", too_long[: 1 << 20], too_long[1 << 20:], b'\n{"jsonrpc":"2.0","method":"after"}\n'):
        got += wire.feed(data)
    assert [m.method for m in got] == ["n", "after"] and wire.skipped == 1
    assert len(msgspec.json.decode(got[0].params)["p"]) == w.MAX_LINE_BYTES - len(head) - len(tail)


def test_select_options_flatten_groups():
    option = w.decode_as(json.dumps({"id": "model", "options": [
        {"value": "a"}, {"group": "g", "name": "G", "options": [{"value": "b"}, {"value": 3}]}, 7]}).encode(),
        w.ConfigOption)
    assert option.values() == ["a", "b"]


def test_the_fuzz_properties_hold():
    for harness in fuzz_acp_wire.HARNESSES:
        # No per-example deadline: the machine is loaded; fuzz/ runs them far longer.
        settings(max_examples=40, deadline=None, database=None)(harness)()


def test_the_shared_connection_counts_unmatched_answers_and_errors_carry_data():
    from scv.core.jsonrpc import Connection, Response
    conn = Connection(first_id=1, peer="the server")
    asked = conn.request("tools/list", {})
    conn.forget(asked)
    assert conn.feed(b'{"jsonrpc":"2.0","id":1,"result":{}}\n') == [] and conn.unmatched == 1
    conn.request("x", {})
    got = conn.feed(b'{"jsonrpc":"2.0","id":2,"error":7}\n')
    assert isinstance(got[0], Response) and "the server answered with an error of no known shape" in got[0].error.message
    conn.respond_error(None, -32700, "not JSON", {"line": 1})
    assert json.loads(bytes(conn.out).splitlines()[-1])["error"] == {"code": -32700, "message": "not JSON",
                                                                        "data": {"line": 1}}
