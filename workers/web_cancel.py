"""Prompt cancellation of a download: a watcher thread waits on the call's cancellation token
and, once the call is cancelled, shuts the connection's socket down, so a read blocked on a
slow server returns at once instead of when the supervisor's backstop kills the worker.

While the watcher runs it is the only reader of the token; the download asks `cancelled()`.
"""

import os
import select
import socket
import threading

from workers.running.cancel_token import CancelToken
from workers.web_transport import response_socket


class CancelWatch:
    def __init__(self, token: CancelToken):
        self._token = token
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._watch, name="scv-web-cancel", daemon=True)

    def __enter__(self) -> "CancelWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join()
        os.close(self._stop_r)
        os.close(self._stop_w)

    def cancelled(self) -> bool:
        return self._token.cancelled

    def attach(self, response) -> None:
        """Watches the socket a response is read from (urllib3 keeps it on the connection)."""
        with self._lock:
            self._sock = response_socket(response)
            if self._token.cancelled:
                self._shut()

    def _shut(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _watch(self) -> None:
        while True:
            fds = self._token.fds() + [self._stop_r]
            ready, _, _ = select.select(fds, [], [])
            if self._stop_r in ready:
                return
            if self._token.check():
                with self._lock:
                    self._shut()
                return
