"""The model endpoint's connection against real loopback servers: one kept connection across
requests, an idle connection the server dropped opened again, `Connection: close` and chunked
answers, TLS through a CONNECT proxy from the environment, and a header that would split the
request refused before anything is sent."""

import contextlib
import json
import select
import shutil
import socket
import ssl
import subprocess
import threading

import pytest

from scv.providers import connection as connection_module
from scv.providers.connection import Connection, RequestFailed
from tests.loopback_http import serve_posts


class Endpoint:
    """A loopback endpoint recording each POST's client port, request line, headers and body."""

    def __init__(self, answer=None):
        self.seen = []
        self.answer = answer or self.ok
        self.server, _ = serve_posts(self._post)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/responses"

    def _post(self, h):
        body = json.loads(h.rfile.read(int(h.headers["Content-Length"])))
        self.seen.append({"port": h.client_address[1], "path": h.path, "host": h.headers["Host"], "body": body})
        self.answer(h, len(self.seen))

    @staticmethod
    def ok(h, n):
        h.send_response(200)
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"ok")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    made = []

    def make(answer=None):
        made.append(Endpoint(answer))
        return made[-1]
    yield make
    for one in made:
        one.close()


def _post(conn: Connection, body: dict) -> bytes:
    response = conn.post(body, {"Authorization": "Bearer k"})
    assert response.status == 200
    data = response.read()
    conn.finish(response)
    return data


def test_requests_share_one_kept_connection(endpoint):
    server = endpoint()
    conn = Connection(server.url, 10, 10)
    order = []
    assert [_post(conn, {"n": n, "text": "näive"}) for n in range(3)] == [b"ok"] * 3
    response = conn.post({"n": 3}, {}, sent=lambda: order.append("sent"))
    order.append("answered")
    response.read()
    conn.finish(response)
    assert order == ["sent", "answered"]    # called once written, before the answer was read
    assert len({seen["port"] for seen in server.seen}) == 1
    assert [seen["body"]["n"] for seen in server.seen] == [0, 1, 2, 3]
    assert server.seen[0]["body"]["text"] == "näive"
    assert server.seen[0]["path"] == "/v1/responses"
    assert server.seen[0]["host"] == f"127.0.0.1:{server.server.server_address[1]}"
    conn.close()


def test_an_idle_connection_the_server_dropped_is_opened_again(endpoint):
    def drop_after_answering(h, n):
        Endpoint.ok(h, n)
        h.close_connection = True       # closes without saying so, as an idle timeout does

    server = endpoint(drop_after_answering)
    conn = Connection(server.url, 10, 10)
    assert _post(conn, {"n": 1}) == b"ok"
    peer = conn.socket()
    select.select([peer], [], [], 10)   # the server's close has arrived
    assert _post(conn, {"n": 2}) == b"ok"
    assert len(server.seen) == 2 and server.seen[0]["port"] != server.seen[1]["port"]
    conn.close()


def test_connection_close_and_chunked_answers(endpoint):
    def answer(h, n):
        h.send_response(200)
        if n == 1:
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for part in (b"data: one\n\n", b"data: two\n\n"):
                h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            h.wfile.write(b"0\r\n\r\n")
        else:
            h.send_header("Content-Length", "4")
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(b"last")

    server = endpoint(answer)
    conn = Connection(server.url, 10, 10)
    assert _post(conn, {}) == b"data: one\n\ndata: two\n\n"
    assert _post(conn, {}) == b"last"
    assert conn.socket() is None                    # the server said it closes: not kept
    assert _post(conn, {}) == b"last"
    ports = [seen["port"] for seen in server.seen]
    assert ports[0] == ports[1] and ports[2] != ports[1]
    conn.close()


def test_a_header_with_a_line_break_is_refused_before_sending(endpoint):
    server = endpoint()
    conn = Connection(server.url, 10, 10)
    with pytest.raises(RequestFailed, match="line break"):
        conn.post({}, {"Authorization": "Bearer k\r\nX-Injected: 1"})
    assert _post(conn, {"after": True}) == b"ok"
    assert [seen["body"] for seen in server.seen] == [{"after": True}]
    conn.close()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := a.recv(65536):
            b.sendall(data)
    for end in (a, b):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


class ConnectProxy:
    """A CONNECT-only proxy on 127.0.0.1 recording each request line."""

    def __init__(self):
        self.lines = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head:
                head += client.recv(4096)
            line = head.split(b"\r\n")[0].decode()
            self.lines.append(line)
            host, port = line.split()[1].rsplit(":", 1)
            upstream = socket.create_connection(("127.0.0.1", int(port)))
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    def close(self):
        self.listener.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_through_a_connect_proxy_from_the_environment(endpoint, tmp_path, monkeypatch):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    server = endpoint()
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server.server.socket = served.wrap_socket(server.server.socket, server_side=True)
    trusted = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(connection_module, "_tls_context", lambda: trusted)
    proxy = ConnectProxy()
    try:
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        port = server.server.server_address[1]
        conn = Connection(f"https://localhost:{port}/v1/messages", 10, 10)
        assert _post(conn, {"over": "tls"}) == b"ok"
        assert _post(conn, {"again": True}) == b"ok"
        assert proxy.lines == [f"CONNECT localhost:{port} HTTP/1.1"]       # one tunnel, kept
        assert [seen["body"] for seen in server.seen] == [{"over": "tls"}, {"again": True}]
        assert server.seen[0]["path"] == "/v1/messages" and server.seen[0]["host"] == f"localhost:{port}"
        conn.close()
    finally:
        proxy.close()


def test_a_body_left_short_is_drained_for_reuse_or_closed_when_its_end_does_not_come(endpoint, monkeypatch):
    """A reader that stops before the end (a stream's last event read, its terminating chunk not)
    keeps the connection when the end follows; an end that does not come within DRAIN_SECONDS
    costs the connection, not the next request."""
    hold = threading.Event()

    def two_chunks(h, n):
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(b"4\r\nlast\r\n")
        h.wfile.flush()
        if n == 2:
            hold.wait(30)               # the second answer's end comes only after the drain gave up
        h.wfile.write(b"0\r\n\r\n")

    monkeypatch.setattr(connection_module, "DRAIN_SECONDS", 0.3)
    server = endpoint(two_chunks)
    conn = Connection(server.url, 10, 10)
    for n in (1, 2, 3):
        response = conn.post({"n": n}, {})
        assert response.read1(4) == b"last"         # what the reader wanted, nothing more
        conn.finish(response, drain=True)
        if n == 2:
            assert conn.socket() is None            # closed: its end did not come in time
            hold.set()
    ports = [seen["port"] for seen in server.seen]
    assert ports[0] == ports[1] != ports[2]
    conn.close()
