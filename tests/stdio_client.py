"""A test client for `scv server --stdio` run as a real process: sends requests, reads responses
and notifications through the protocol's own server->client decoder."""

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from scv.protocol.messages import ServerMessage, decode_server_message
from tests.conftest import scv_env


class StdioClient:
    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd=None, prefix: tuple[str, ...] = ()):
        """`prefix` runs the server through another command (such as `unshare`) that execs the rest."""
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "scv", "server", "--stdio", *args], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env or scv_env())
        self.messages: "queue.Queue[ServerMessage | None]" = queue.Queue()
        self.seen: list[ServerMessage] = []
        self._unclaimed: list[ServerMessage] = []
        self._ids = iter(range(1, 1_000_000))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.messages.put(decode_server_message(line))
        self.messages.put(None)

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method: str, params: dict[str, Any] | None = None, id: Any = "auto") -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if id == "auto":
            id = next(self._ids)
        if id is not None:
            message["id"] = id
        if params is not None:
            message["params"] = params
        self.send_raw(json.dumps(message).encode() + b"\n")
        return id

    def next(self, timeout: float = 30) -> ServerMessage:
        try:
            message = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the server in {timeout:.0f} s; seen so far: "
                                 f"{[(m.method, m.id, m.params or m.result or m.error) for m in self.seen]}") from None
        assert message is not None, f"the server closed stdout; stderr: {self.stderr()}"
        self.seen.append(message)
        return message

    def _take(self, wanted, timeout: float) -> ServerMessage:
        """The first message, in arrival order, that `wanted` accepts; the others stay for later
        calls (a response may arrive after the notifications of the turn it started)."""
        for index, message in enumerate(self._unclaimed):
            if wanted(message):
                return self._unclaimed.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(0.1, deadline - time.monotonic()))
            if wanted(message):
                return message
            self._unclaimed.append(message)

    def response(self, id: Any, timeout: float = 30) -> ServerMessage:
        return self._take(lambda m: m.method is None and m.id == id, timeout)

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = self.response(self.send(method, params))
        assert reply.error is None, reply.error
        return reply.result

    def until(self, method: str, timeout: float = 30, **match: Any) -> ServerMessage:
        return self._take(lambda m: m.method == method and all(m.params.get(k) == v for k, v in match.items()),
                          timeout)

    def first(self, wanted, timeout: float = 30) -> ServerMessage:
        """The first message, in arrival order, that `wanted` accepts (others stay for later calls)."""
        return self._take(wanted, timeout)

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m.params for m in self.seen if m.method == method]

    def start(self, **session: Any) -> dict[str, Any]:
        assert self.request("initialize", {"protocol_version": 3})["protocol_version"] == 3
        return self.request("session.start", session)

    def close_stdin(self) -> None:
        self.proc.stdin.close()

    def wait(self, timeout: float = 30) -> int:
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read().decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
