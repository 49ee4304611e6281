"""The line reader over real pipes (the stdio server's and the batch runner's): whole lines in any
chunking, blank ones skipped, an over-long line skipped as it arrives, a last line without a
newline, and a stop that ends a silent wait."""

import os
import threading

from hypothesis import given, settings, strategies as st

from scv.core.cancellation import Cancellation
from scv.core.lines import TOO_LONG, LineReader


def reader_over(data_chunks: list[bytes], limit: int = 64):
    r, w = os.pipe()
    stop = Cancellation()

    def feed():
        for chunk in data_chunks:
            os.write(w, chunk)
        os.close(w)
    threading.Thread(target=feed, daemon=True).start()
    return LineReader(r, stop.fileno(), limit), r, stop


def read_all(reader: LineReader) -> list:
    out = []
    while (line := reader.next()) is not None:
        out.append(line)
    return out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=20).filter(lambda b: b"\n" not in b), max_size=8), st.data())
def test_lines_arrive_whole_however_the_pipe_cuts_them(lines, data):
    stream = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=6)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)]) if stream[a:b]]
    reader, fd, stop = reader_over(chunks)
    assert read_all(reader) == [line for line in lines if line.strip()]
    os.close(fd)
    stop.close()


def test_an_over_long_line_is_skipped_and_the_next_one_read():
    reader, fd, stop = reader_over([b"x" * 50, b"y" * 100, b"\nshort\nlast"], limit=64)
    assert read_all(reader) == [TOO_LONG, b"short", b"last"]
    os.close(fd)
    stop.close()


def test_a_stop_ends_a_wait_on_a_silent_input():
    r, w = os.pipe()
    stop = Cancellation()
    reader = LineReader(r, stop.fileno(), 64)
    got = []
    thread = threading.Thread(target=lambda: got.append(reader.next()))
    thread.start()
    stop.cancel()       # however early or late: the byte stays in the pipe until select sees it
    thread.join(20)
    assert not thread.is_alive() and got == [None]
    for fd in (r, w):
        os.close(fd)
    stop.close()
