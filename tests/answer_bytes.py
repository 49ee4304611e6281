"""Feeding `scv.providers.answer.Answer` bytes as a socket would deliver them, in given pieces,
and the answer's properties with what they draw from (the suite's tests and bin/fuzz share them)."""

import io

from hypothesis import strategies as st

from scv.providers.answer import Answer


class _Pieces(io.RawIOBase):
    """Each raw read returns at most the next piece: the splits a socket may make."""

    def __init__(self, pieces: list[bytes]):
        self._pieces = [piece for piece in pieces if piece]

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self._pieces:
            return 0
        piece = self._pieces[0]
        n = min(len(buffer), len(piece))
        buffer[:n] = piece[:n]
        if n == len(piece):
            self._pieces.pop(0)
        else:
            self._pieces[0] = piece[n:]
        return n


class PieceSocket:
    """What Answer needs of a socket: `makefile("rb")` over the given pieces."""

    def __init__(self, pieces: list[bytes]):
        self._pieces = pieces

    def makefile(self, mode: str):
        assert mode == "rb"
        return io.BufferedReader(_Pieces(self._pieces), 64)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    return pieces + [data[start:]]


def read_all(pieces: list[bytes], sizes: list[int], method: str = "POST") -> tuple[Answer, bytes]:
    """The answer and its body, read with read1 in the given sizes (then 7 bytes at a time)."""
    answer = Answer(PieceSocket(pieces), method)
    body, turn = [], 0
    while data := answer.read1(sizes[turn] if turn < len(sizes) else 7):
        body.append(data)
        turn += 1
    return answer, b"".join(body)


def framed(body: bytes, framing: str, chunk_sizes: list[int]) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Case: Mixed\r\n"
    if framing == "length":
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    if framing == "close":
        return head + b"\r\n" + body
    out, at = [head + b"Transfer-Encoding: chunked\r\n\r\n"], 0
    for size in chunk_sizes + [len(body)]:
        part = body[at:at + max(1, size)]
        if not part:
            break
        out.append(b"%x;ext=1\r\n%s\r\n" % (len(part), part))
        at += len(part)
    return b"".join(out) + b"0\r\nTrailer: yes\r\n\r\n"


ANSWER_PIECES = st.sampled_from([b"HTTP/1.1 200 OK\r\n", b"HTTP/1.0 103 Early\r\n", b"Content-Length: 5\r\n",
                                 b"Transfer-Encoding: chunked\r\n", b"\r\n", b"\n", b"5\r\n", b"0\r\n", b"zz\r\n",
                                 b"hello", b"Connection: close\r\n", b" folded\r\n", b"Bad Header\r\n", b":x\r\n",
                                 b"Content-Length: -1\r\n", b"ffffffffffffffffffff\r\n", b"\xff\xfe", b";\r\n"])
ANSWER_BYTES = st.lists(ANSWER_PIECES | st.binary(max_size=12), max_size=30).map(b"".join)


def check_framed_body_reads_back(body: bytes, framing: str, chunk_sizes: list[int], cuts: list[int],
                                 sizes: list[int]) -> None:
    """Any body, framed by length, chunks or the close and cut anywhere, reads back the same."""
    answer, got = read_all(split(framed(body, framing, chunk_sizes), cuts), sizes)
    assert got == body
    assert answer.status == 200 and answer.isclosed()
    assert answer.headers.get("x-CASE") == "Mixed" and "content-type" in answer.headers
    assert answer.will_close == (framing == "close")


def check_any_bytes(data: bytes, cuts: list[int]) -> None:
    """Any bytes end in an answer read to its end or an OSError that says where, nothing else."""
    try:
        answer, _ = read_all(split(data, cuts), [])
    except OSError as failure:
        assert str(failure)
    else:
        assert answer.isclosed()
