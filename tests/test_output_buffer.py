"""HeadTail keeps exactly the first and last halves of any stream, whatever its chunking."""

from hypothesis import given
from hypothesis import strategies as st

from workers.output_buffer import HeadTail


@given(st.binary(max_size=3000), st.lists(st.integers(min_value=0, max_value=3000), max_size=30),
       st.integers(min_value=2, max_value=600), st.booleans())
def test_any_chunking_keeps_head_and_tail(data, cuts, limit, views):
    buffer = HeadTail(limit)
    points = sorted({c % (len(data) + 1) for c in cuts}) + [len(data)]
    scratch = bytearray(len(data))
    last = 0
    for point in points:
        piece = data[last:point]
        if views:     # a reused buffer, overwritten after each feed
            scratch[:len(piece)] = piece
            buffer.feed(memoryview(scratch)[:len(piece)])
            scratch[:len(piece)] = b"\xff" * len(piece)
        else:
            buffer.feed(piece)
        last = point
    assert buffer.total == len(data)
    assert buffer.truncated is (len(data) > limit)
    head = limit // 2
    tail = limit - head
    if len(data) <= limit:
        assert bytes(buffer.head) + buffer._tail() == data
    else:
        assert bytes(buffer.head) == data[:head]
        assert buffer._tail() == data[-tail:]
        assert f"[... {len(data) - limit} bytes of output omitted ...]" in buffer.text()
