"""Length-prefixed frames: a 4-byte big-endian length, then that many bytes of msgpack.

`FrameReader` is fed arbitrary chunks (a pipe may split or join frames anywhere) and yields
whole payloads. EOF between frames is a clean end; EOF inside one, or a length over the
limit, is a `ProtocolError`.
"""

import struct

from scv.core.errors import ProtocolError

HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 64 * 1024 * 1024


def frame(payload: bytes) -> bytes:
    if len(payload) > MAX_FRAME_BYTES:
        raise ProtocolError(f"a message of {len(payload)} bytes is over the {MAX_FRAME_BYTES}-byte frame limit")
    return HEADER.pack(len(payload)) + payload


class FrameReader:
    def __init__(self, max_bytes: int = MAX_FRAME_BYTES):
        self._buf = bytearray()
        self._max = max_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        """Adds a chunk and returns every payload it completed, in order."""
        self._buf += chunk
        out = []
        while len(self._buf) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buf)
            if size > self._max:
                raise ProtocolError(f"a frame announced {size} bytes, over the {self._max}-byte limit")
            end = HEADER.size + size
            if len(self._buf) < end:
                break
            out.append(bytes(self._buf[HEADER.size:end]))
            del self._buf[:end]
        return out

    def close(self) -> None:
        """Called at EOF: a partial frame left over means the writer died mid-message."""
        if self._buf:
            raise ProtocolError(f"the stream ended inside a frame ({len(self._buf)} bytes of it arrived)")
