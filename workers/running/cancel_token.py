"""The worker's cancellation token.

The supervisor cancels a call by sending a `Cancel` frame on the worker's input pipe; a
SIGTERM to the worker (its fork point going away) counts the same. Executors wait on
`token.fds()` together with their own descriptors and call `token.check()` when one is ready.

A live worker serves several calls over one input pipe, one at a time: each call gets a token
of its own over the same reader, and a `Cancel` naming another call (one that crossed its
result on the way) is ignored. Frames that are not for the token (the next `Call`) wait in
`later` for the worker's own loop.
"""

import os
import signal

from scv.core.frames import FrameReader
from scv.core.messages import ApprovalAnswer, Cancel, decode_to_worker


class CancelToken:
    def __init__(self, control_fd: int | None, reader: FrameReader | None = None, early: list[bytes] = (),
                 call_id: str = ""):
        self.control_fd = control_fd
        self.call_id = call_id
        self.cancelled = False
        self.closed_input = False       # the supervisor closed our input: nobody waits for this call
        self.terminated = False         # SIGTERM: the fork point is stopping its workers
        self.answers: dict[str, bool] = {}
        self.later: list[bytes] = []
        self._reader = reader or FrameReader()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGTERM, self._on_term)
        self._handle(list(early))
        if early:
            os.write(self._wake_w, b"e")    # make fds() ready so executors look at once

    def _on_term(self, signum, frame):
        self.cancelled = self.terminated = True
        try:
            os.write(self._wake_w, b"t")
        except OSError:
            pass

    def fds(self) -> list[int]:
        return [self._wake_r] + ([self.control_fd] if self.control_fd is not None else [])

    def check(self) -> bool:
        """Reads whatever is ready on the control pipe; True once the call is cancelled."""
        try:
            os.read(self._wake_r, 4096)
        except BlockingIOError:
            pass
        if self.control_fd is not None:
            try:
                chunk = os.read(self.control_fd, 65536)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                # The supervisor is gone: nobody is waiting for this call any more.
                self.cancelled = True
                self.closed_input = True
                self.control_fd = None
            elif chunk:
                self._handle(self._reader.feed(chunk))
        return self.cancelled

    def _handle(self, payloads: list[bytes]) -> None:
        for payload in payloads:
            match decode_to_worker(payload):
                case Cancel(id=wanted):
                    if not wanted or not self.call_id or wanted == self.call_id:
                        self.cancelled = True
                case ApprovalAnswer(id=answer_id, approved=approved):
                    self.answers[answer_id] = approved
                case _:
                    self.later.append(payload)

    def close(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
