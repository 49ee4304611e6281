"""Longer runs of frame and message decoding: chunking, torn and oversized frames, garbage."""

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from scv.core.errors import ProtocolError
from scv.core.frames import FrameReader, frame
from scv.core.messages import decode_from_worker, decode_to_worker


@given(st.lists(st.binary(max_size=5000), max_size=20), st.lists(st.integers(min_value=0), max_size=60))
def chunking_never_changes_the_payloads(items, cuts):
    stream = b"".join(frame(p) for p in items)
    points = sorted({c % (len(stream) + 1) for c in cuts}) + [len(stream)]
    reader, got, last = FrameReader(), [], 0
    for p in points:
        got.extend(reader.feed(stream[last:p]))
        last = p
    reader.close()
    assert got == items


@given(st.binary(max_size=2000), st.integers(min_value=16, max_value=4096))
def arbitrary_bytes_give_payloads_or_a_protocol_error(blob, limit):
    reader = FrameReader(max_bytes=limit)
    try:
        for payload in reader.feed(blob):
            assert len(payload) <= limit
            for decode in (decode_to_worker, decode_from_worker):
                try:
                    assert isinstance(decode(payload), msgspec.Struct)
                except ProtocolError:
                    pass
        reader.close()
    except ProtocolError:
        pass


HARNESSES = [chunking_never_changes_the_payloads, arbitrary_bytes_give_payloads_or_a_protocol_error]
