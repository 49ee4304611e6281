"""scv/core/jsonrpc.py's strict connection, the stdio server's side: a line it cannot act on comes
back as Unreadable, in its place among the messages, with the JSON-RPC error to answer it with;
a request with "id": null is a request; a client's side (not strict) ignores and counts the same
lines, as before."""

from scv.core import jsonrpc


def test_unreadable_lines_come_back_in_order_with_their_error():
    wire = jsonrpc.Connection(strict=True, limit=64)
    arrived = wire.feed(b'{not json\n["a"]\n{"id":7,"method":"turn.cancel"}\n'
                        b'{"jsonrpc":"2.0","id":true,"method":"x"}\n{"jsonrpc":"2.0","id":3}\n'
                        b'{"jsonrpc":"2.0","id":4,"method":"turn.cancel","params":{}}\n'
                        + b'{"jsonrpc":"2.0","method":"' + b"x" * 100 + b'"}\n'
                        b'{"jsonrpc":"2.0","id":null,"method":"turn.cancel"}\n')
    assert [(m.code, m.id) if isinstance(m, jsonrpc.Unreadable) else (m.method, m.id, m.answer) for m in arrived] == [
        (jsonrpc.PARSE_ERROR, None), (jsonrpc.INVALID_REQUEST, None), (jsonrpc.INVALID_REQUEST, 7),
        (jsonrpc.INVALID_REQUEST, None), (jsonrpc.INVALID_REQUEST, 3), ("turn.cancel", 4, True),
        (jsonrpc.INVALID_REQUEST, None), ("turn.cancel", None, True)]
    assert [m.message for m in arrived if isinstance(m, jsonrpc.Unreadable)] == [
        jsonrpc.NOT_JSON, jsonrpc.NOT_AN_OBJECT, jsonrpc.NO_VERSION, jsonrpc.BAD_ID, jsonrpc.NO_METHOD,
        "a message is over 64 bytes; it was skipped"]
    assert wire.ignored == 0


def test_a_notification_owes_no_answer_and_a_lenient_side_still_ignores_what_it_cannot_read():
    strict = jsonrpc.Connection(strict=True)
    [note] = strict.feed(b'{"jsonrpc":"2.0","method":"turn.cancel"}\n')
    assert note.id is None and note.answer is False
    lenient = jsonrpc.Connection()
    assert lenient.feed(b'{not json\n{"id":null,"method":"x"}\n{"id":1,"method":"x"}\n')[0].answer is True
    assert lenient.ignored == 2


def test_the_fuzz_properties_hold():
    from hypothesis import settings

    from fuzz import fuzz_protocol
    for harness in fuzz_protocol.HARNESSES:
        settings(max_examples=200, deadline=None, database=None)(harness)()
