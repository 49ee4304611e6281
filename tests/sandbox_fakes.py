"""What the sandbox tests share: the kernel's support (to skip where it lacks a feature), runners
with a sandbox configured, a loopback TCP server and a UDP responder that count who reached them,
and a planted set of secrets."""

import socket
import sys
import threading
from pathlib import Path

import msgspec
import pytest

from scv.config.load import Config, ToolsConfig
from scv.sandbox import kernel

SUPPORT = kernel.support()
PYTHON = sys.executable

needs_landlock = pytest.mark.skipif(SUPPORT.landlock_abi < 1, reason=f"no Landlock: {SUPPORT.landlock_error}")
needs_network_namespace = pytest.mark.skipif(
    not SUPPORT.network_namespace, reason=f"no network namespace: {SUPPORT.network_namespace_error}")
needs_mount_namespace = pytest.mark.skipif(
    not SUPPORT.mount_namespace, reason=f"no mount namespace: {SUPPORT.mount_namespace_error}")


def abi_at_least(abi: int):
    return pytest.mark.skipif(SUPPORT.landlock_abi < abi, reason=f"Landlock ABI {SUPPORT.landlock_abi} < {abi}")


def sandbox_config(mode: str = "workspace-write", network: bool = False, writable=(), fallback: str = "refuse") -> Config:
    return Config(tools=ToolsConfig(sandbox=mode, sandbox_network=network, sandbox_writable=[str(w) for w in writable],
                                    sandbox_fallback=fallback))


def with_support(monkeypatch, **changes) -> None:
    """Makes the supervisor side see a kernel with less than this one has (the worker then uses
    the fallback mechanism it is told to)."""
    changed = msgspec.structs.replace(SUPPORT, **changes)
    monkeypatch.setattr(kernel, "support", lambda: changed)


def bash(runner, command: str) -> tuple[bool, dict]:
    result = runner.call("bash", {"command": command})
    return result.ok, result.value


class LoopbackTcp:
    """A TCP server on 127.0.0.1 that records each line a client sends."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.lines: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                try:
                    self.lines.append(conn.makefile("rb").readline().strip())
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                except OSError:
                    pass

    def close(self):
        self.sock.close()


class LoopbackUdp:
    """A UDP responder on 127.0.0.1 standing in for a DNS server: it answers each datagram."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                data, peer = self.sock.recvfrom(512)
            except OSError:
                return
            self.seen += 1
            self.sock.sendto(data[:2] + b"answer", peer)

    def close(self):
        self.sock.close()


def udp_query(port: int) -> str:
    """A command sending one DNS-shaped datagram to the responder; prints `answered` on a reply."""
    script = (f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); "
              f"s.sendto(b'\\x12\\x34query', ('127.0.0.1', {port})); s.recv(512); print('answered')")
    return f"{PYTHON} -c \"{script}\""


def tcp_connect(port: int) -> str:
    script = (f"import socket; c = socket.create_connection(('127.0.0.1', {port}), 5); c.sendall(b'from-sandbox\\n'); "
              f"print(c.recv(100).decode())")
    return f"{PYTHON} -c \"{script}\""


def plant_secrets(home: Path, scv_home: Path) -> dict[str, Path]:
    """Secrets in the user's home and in SCV_HOME, each holding a word that must not leak."""
    planted = {"SECRET-SSH": home / ".ssh" / "id_ed25519", "SECRET-AWS": home / ".aws" / "credentials",
               "SECRET-NETRC": home / ".netrc", "SECRET-SCV-CONFIG": scv_home / "config-copy.toml",
               "SECRET-AGENT": scv_home / "agents" / "claude" / ".claude" / "token"}
    for word, path in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(word + "\n")
    return planted
