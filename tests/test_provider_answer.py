"""SCV's reader of a model endpoint's HTTP answer: any body, framed by length, chunks or the
close and cut anywhere, reads back the same; any bytes at all end in an answer or an OSError,
never another exception; and the bounds and framings http.client has (interim answers, folded
headers, trailers, over-long lines, too many headers, a body cut short)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scv.providers.answer import Answer, BrokenAnswer
from tests.answer_bytes import ANSWER_BYTES, check_any_bytes, check_framed_body_reads_back, read_all


@given(st.binary(max_size=300), st.sampled_from(["length", "chunked", "close"]),
       st.lists(st.integers(min_value=1, max_value=40), max_size=8),
       st.lists(st.integers(min_value=0, max_value=400), max_size=10),
       st.lists(st.integers(min_value=1, max_value=50), max_size=10))
def test_a_framed_body_cut_anywhere_reads_back_the_same(body, framing, chunk_sizes, cuts, sizes):
    check_framed_body_reads_back(body, framing, chunk_sizes, cuts, sizes)


@given(ANSWER_BYTES, st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_any_bytes_end_in_an_answer_or_an_os_error(data, cuts):
    check_any_bytes(data, cuts)


def answer_of(data: bytes, method: str = "POST") -> tuple[Answer, bytes]:
    return read_all([data], [], method)


def test_interim_answers_are_skipped_and_folded_headers_joined():
    answer, body = answer_of(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                             b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nX-Note: one\r\n two\r\n"
                             b"Set: a\r\nSet: b\r\nContent-Length: 4\r\n\r\nslow")
    assert answer.status == 429 and answer.reason == "Too Many Requests"
    assert answer.headers["Retry-After"] == "1" and answer.headers.get("x-note") == "one two"
    assert answer.headers.get("set") == "a, b" and body == b"slow"


@pytest.mark.parametrize("data, method", [
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", "POST"),
    (b"HTTP/1.1 200 Connection established\r\n\r\n", "CONNECT"),
])
def test_answers_without_a_body(data, method):
    answer, body = answer_of(data, method)
    assert body == b"" and answer.isclosed() and not answer.will_close


@pytest.mark.parametrize("data, said", [
    (b"", "closed the connection before answering"),
    (b"SMTP ready\r\n\r\n", "not an HTTP/1.1 status line"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 70000 + b"\r\n\r\n", "a line over 65536 bytes"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n", "more than 100 header lines"),
    (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "a header line without a name"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n", "Content-Length is not a number"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not hexadecimal"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", "not followed by its line end"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\ndata: cut", "closed inside the body"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "closed inside the body"),
])
def test_broken_answers_say_where(data, said):
    with pytest.raises(OSError, match=said) as raised:
        answer_of(data)
    assert isinstance(raised.value, (BrokenAnswer, ConnectionResetError))

