"""Longer runs over the client-side decoders: a model endpoint's HTTP answer (any framed body cut
anywhere reads back the same; any bytes end in an answer or an OSError), the SSE decoder (any bytes, cut anywhere, decode
the same as in one piece and never raise anything but SSEError) and the stdio server's request
decoding (any line, through the strict connection and then the method's params, ends in a request
or in one JSON-RPC error: Unreadable or BadMessage)."""

import json

from hypothesis import given
from hypothesis import strategies as st

from scv.core.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, Connection, Unreadable
from scv.protocol.messages import METHODS, PARAMS, BadMessage, decode_params
from scv.providers.sse import SSEDecoder, SSEError
from tests.answer_bytes import ANSWER_BYTES, check_any_bytes, check_framed_body_reads_back

SSE_PIECES = st.sampled_from([b"data:", b"data: ", b"event: x", b"id: 1", b":c", b"\n", b"\r", b"\r\n", b"{}",
                              b"[DONE]", b"retry: 5", b"\xff", b"\xe2\x82", b"data"])
SSE_BYTES = st.lists(SSE_PIECES | st.binary(max_size=8), max_size=40).map(b"".join)


def _decode(chunks: list[bytes]):
    decoder = SSEDecoder(max_event_bytes=1 << 12)
    events = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


@given(SSE_BYTES, st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def sse_split_anywhere_decodes_the_same(data: bytes, cuts: list[int]):
    points = sorted({min(c, len(data)) for c in cuts})
    chunks, start = [], 0
    for point in points:
        chunks.append(data[start:point])
        start = point
    chunks.append(data[start:])
    try:
        whole = _decode([data])
    except SSEError:
        return
    assert _decode(chunks) == whole
    for event in whole:
        assert isinstance(event.data, str) and event.event


PARAM_VALUES = st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.lists(st.integers(), max_size=2)
REQUESTS = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
    "id": st.none() | st.integers() | st.text(max_size=5) | st.booleans(),
    "method": st.sampled_from(list(METHODS) + ["x", ""]) | st.integers(),
    "params": st.dictionaries(st.sampled_from(["prompt", "id", "approved", "cwd", "protocol_version", "model",
                                               "auto_approve", "delegation_depth", "system_prompt", "zzz"]),
                              PARAM_VALUES, max_size=4) | PARAM_VALUES,
})


@given(REQUESTS | st.binary(max_size=40).map(lambda b: b.decode("latin-1")))
def jsonrpc_decoding_is_total(message):
    line = json.dumps(message).encode() if isinstance(message, dict) else message.encode("utf-8", "surrogatepass")
    arrived = Connection(strict=True).feed(line.replace(b"\n", b" ") + b"\n")
    if not arrived:
        assert not line.strip()
        return
    [incoming] = arrived
    if isinstance(incoming, Unreadable):
        assert incoming.code in (PARSE_ERROR, INVALID_REQUEST) and incoming.message
        assert incoming.id is None or isinstance(incoming.id, (int, str))
        return
    try:
        params = decode_params(incoming)
    except BadMessage as bad:
        assert bad.code in (METHOD_NOT_FOUND, INVALID_PARAMS)
        assert str(bad)
        return
    assert isinstance(message, dict) and message["method"] in METHODS and message["jsonrpc"] == "2.0"
    assert type(params) is PARAMS[message["method"]]


@given(st.binary(max_size=2000), st.sampled_from(["length", "chunked", "close"]),
       st.lists(st.integers(min_value=1, max_value=300), max_size=20),
       st.lists(st.integers(min_value=0, max_value=3000), max_size=20),
       st.lists(st.integers(min_value=1, max_value=500), max_size=20))
def answer_framed_body_reads_back(body, framing, chunk_sizes, cuts, sizes):
    check_framed_body_reads_back(body, framing, chunk_sizes, cuts, sizes)


@given(ANSWER_BYTES, st.lists(st.integers(min_value=0, max_value=400), max_size=10))
def answer_any_bytes_is_read_or_an_os_error(data, cuts):
    check_any_bytes(data, cuts)


HARNESSES = [sse_split_anywhere_decodes_the_same, jsonrpc_decoding_is_total, answer_framed_body_reads_back,
             answer_any_bytes_is_read_or_an_os_error]
