"""Loopback HTTP servers for the web tests: a route table of canned or computed responses,
bound to 127.0.0.1 only, recording each request it saw."""

import http.server
import shutil
import socket
import subprocess
import ssl
import threading
from dataclasses import dataclass, field
from typing import Callable

import pytest


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "text/html; charset=utf-8"


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class LoopbackServer:
    """`routes` maps a path (without query) to a Reply or to a function(handler) that answers."""

    def __init__(self, routes: dict[str, Reply | Callable] | None = None, tls: ssl.SSLContext | None = None):
        self.routes: dict[str, Reply | Callable] = dict(routes or {})
        self.seen: list[Seen] = []
        self.sent_bytes: dict[str, int] = {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                server.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}))
                route = server.routes.get(path)
                if route is None:
                    route = Reply(404, b"<html><body><p>no such page</p></body></html>")
                if callable(route):
                    route(self)
                    return
                self.send_response(route.status)
                if route.content_type is not None:
                    self.send_header("Content-Type", route.content_type)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                if not any(name.lower() == "content-length" for name in route.headers):
                    self.send_header("Content-Length", str(len(route.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    self.wfile.write(route.body)
                except OSError:
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path: str = "/", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def begin_text_body(handler, length: int, first: bytes = b"") -> None:
    """Answers 200 with the headers of a text/plain body of `length` bytes and sends `first` of
    them; what comes after (a stall, a trickle) is up to the route."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", str(length))
    handler.end_headers()
    handler.wfile.write(first)
    handler.wfile.flush()


def stream_body(total: int, content_type: str, record: dict, key: str, chunk: bytes = b"x" * 65536):
    """A route that streams `total` bytes and records how many it managed to send."""
    def answer(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(total))
        handler.send_header("Connection", "close")
        handler.end_headers()
        sent = 0
        try:
            while sent < total:
                piece = chunk[: total - sent]
                handler.wfile.write(piece)
                sent += len(piece)
        except OSError:
            pass
        record[key] = sent
        handler.close_connection = True
    return answer


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_certificates(where, host: str):
    """A test certificate authority and a server certificate for `host`, made with openssl in
    `where`; returns (ca.pem, site.pem, site.key). Without openssl the test is skipped."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed; it makes the test certificate authority")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True, timeout=60)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=scv test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "site.key", "-out", "site.csr", "-subj", f"/CN={host}")
    (where / "ext.cnf").write_text(f"subjectAltName=DNS:{host}\nbasicConstraints=CA:FALSE\n"
                                   "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "site.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "site.pem", "-days", "2", "-extfile", "ext.cnf")
    return where / "ca.pem", where / "site.pem", where / "site.key"


def tls_context(site_pem, site_key) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(site_pem, site_key)
    return context
