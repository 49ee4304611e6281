"""Frame decoding: arbitrary chunking, torn frames, oversized frames, and message decoding."""

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scv.core.errors import ProtocolError
from scv.core.frames import HEADER, FrameReader, frame
from scv.core.messages import Call, Cancel, Progress, Result, decode_from_worker, decode_to_worker, encode

payloads = st.lists(st.binary(max_size=3000), max_size=12)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points + [len(data)]:
        out.append(data[last:p])
        last = p
    return out


@given(payloads, st.lists(st.integers(min_value=0), max_size=40))
def test_any_chunking_yields_the_same_payloads(items, cuts):
    stream = b"".join(frame(p) for p in items)
    reader = FrameReader()
    got = []
    for piece in chunked(stream, cuts):
        got.extend(reader.feed(piece))
    reader.close()
    assert got == items


@given(st.binary(min_size=1, max_size=500), st.integers(min_value=1))
def test_a_torn_frame_is_an_error_at_eof(payload, cut):
    data = frame(payload)
    cut = cut % (len(data) - 1) + 1        # strictly inside the frame
    reader = FrameReader()
    assert reader.feed(data[:cut]) == []
    with pytest.raises(ProtocolError, match="ended inside a frame"):
        reader.close()


@given(st.integers(min_value=1025, max_value=2**32 - 1))
def test_an_oversized_length_is_refused_before_buffering(size):
    reader = FrameReader(max_bytes=1024)
    with pytest.raises(ProtocolError, match="over the 1024-byte limit"):
        reader.feed(HEADER.pack(size))


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_garbage_never_decodes_into_anything_but_a_protocol_error(blob):
    for decode in (decode_to_worker, decode_from_worker):
        try:
            message = decode(blob)
        except ProtocolError:
            continue
        assert isinstance(message, msgspec.Struct)


def test_each_direction_has_its_own_tagged_union():
    call = Call(tool="read", executor="workers.read:execute", args={"path": "a"}, workspace="/w", handle="i/c",
                timeout_seconds=1.0, output_limit_bytes=10)
    assert decode_to_worker(encode(call)) == call
    assert decode_to_worker(encode(Cancel())) == Cancel()
    assert decode_from_worker(encode(Progress(line="x"))) == Progress(line="x")
    assert decode_from_worker(encode(Result(ok=True, value={"a": 1}))) == Result(ok=True, value={"a": 1})
    with pytest.raises(ProtocolError):
        decode_from_worker(encode(call))
