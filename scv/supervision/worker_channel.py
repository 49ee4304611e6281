"""The supervisor's end of one worker's pipes: frames to it, frames and stderr from it.

`PipeChannel.wait` turns whatever the pipes (and a cancellation descriptor) have ready into
`ChannelEvent`s for the relay: a decoded message, a stderr chunk, the end of a stream, or a
cancellation. A frame that cannot be decoded is an event too (`Garbled`), never an exception
that silently ends a reader. The relay (scv/supervision/relay.py) decides what the events mean; tests give
it an in-memory channel instead (tests/channel_fakes.py).
"""

import os
import selectors
from typing import Protocol, Union

import msgspec

from scv.core.errors import ProtocolError
from scv.core.frames import FrameReader, frame
from scv.core.messages import ApprovalRequest, Progress, Result, decode_from_worker, encode

READ_BYTES = 1 << 16


# Structs rather than dataclasses: the same fields and matching, and far cheaper to define at
# start-up, which every `scv tool` call pays.
class Message(msgspec.Struct, frozen=True):
    message: Union[Progress, ApprovalRequest, Result]


class Stderr(msgspec.Struct, frozen=True):
    chunk: bytes


class Closed(msgspec.Struct, frozen=True):
    """A stream from the worker reached EOF: "out" (its frames: it exited, or closed them on
    purpose) or "err" (its stderr)."""
    stream: str


class Garbled(msgspec.Struct, frozen=True):
    """The worker wrote something that is not a frame of the protocol."""
    reason: str


class CancelRequested(msgspec.Struct, frozen=True):
    pass


ChannelEvent = Union[Message, Stderr, Closed, Garbled, CancelRequested]


class Channel(Protocol):
    def send(self, message) -> bool:
        """Writes one frame to the worker; False once its input is gone."""

    def wait(self, timeout: float) -> list[ChannelEvent]:
        """What became ready within `timeout` seconds ([] when nothing did)."""

    def listen_for_cancel(self, fd: int | None) -> None:
        """Report `CancelRequested` once `fd` becomes readable (None: stop listening)."""

    def close(self) -> None: ...


class PipeChannel:
    def __init__(self, to_w: int | None, from_r: int, err_r: int):
        self._to_w = to_w
        self._from_r = from_r
        self._err_r = err_r
        self._reader = FrameReader()
        self._sel = selectors.DefaultSelector()
        self._sel.register(from_r, selectors.EVENT_READ, "out")
        self._sel.register(err_r, selectors.EVENT_READ, "err")
        self._cancel_fd: int | None = None
        self._closed = False
        self.out_open = True
        self.err_open = True

    def send(self, message) -> bool:
        return self.send_raw(frame(encode(message)))

    def send_raw(self, data: bytes) -> bool:
        """Writes framed bytes (the call itself may go before the worker exists)."""
        if self._to_w is None:
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._to_w, view):]
            return True
        except OSError:
            # The worker closed its input or exited: nothing more can reach it.
            self._close_input()
            return False

    def listen_for_cancel(self, fd: int | None) -> None:
        if self._cancel_fd is not None:
            self._sel.unregister(self._cancel_fd)
        self._cancel_fd = fd
        if fd is not None:
            self._sel.register(fd, selectors.EVENT_READ, "cancel")

    def wait(self, timeout: float) -> list[ChannelEvent]:
        if not (self.out_open or self.err_open or self._cancel_fd is not None):
            return []
        events: list[ChannelEvent] = []
        for key, _ in self._sel.select(max(0.0, timeout)):
            if key.data == "cancel":
                self.listen_for_cancel(None)
                events.append(CancelRequested())
                continue
            chunk = os.read(key.fd, READ_BYTES)
            if key.data == "err":
                if chunk:
                    events.append(Stderr(chunk))
                else:
                    self._sel.unregister(key.fd)
                    self.err_open = False
                    events.append(Closed("err"))
                continue
            if not chunk:
                self._sel.unregister(key.fd)
                self.out_open = False
                try:
                    self._reader.close()
                except ProtocolError as exc:
                    events.append(Garbled(str(exc)))
                events.append(Closed("out"))
                continue
            events.extend(self._decode(chunk))
        return events

    def _decode(self, chunk: bytes) -> list[ChannelEvent]:
        try:
            payloads = self._reader.feed(chunk)
        except ProtocolError as exc:
            return [Garbled(str(exc))]
        decoded: list[ChannelEvent] = []
        for payload in payloads:
            try:
                decoded.append(Message(decode_from_worker(payload)))
            except ProtocolError as exc:
                decoded.append(Garbled(str(exc)))
                break
        return decoded

    def _close_input(self) -> None:
        if self._to_w is not None:
            try:
                os.close(self._to_w)
            except OSError:
                pass
            self._to_w = None

    def close_input(self) -> None:
        """The worker's input reaches EOF: a live worker takes that as the end of its conversation."""
        self._close_input()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._sel.close()
        self._close_input()
        for fd in (self._from_r, self._err_r):
            try:
                os.close(fd)
            except OSError:
                pass
