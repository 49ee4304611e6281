"""One keep-alive HTTP(S) connection to a model endpoint.

`scv exec` writes its first model request with nothing loaded for it but `socket` (and `ssl`
for an https:// endpoint): a POST is a request line, a few header lines and a JSON body,
written on the socket directly, and the answer is read by `answer.Answer`. (http.client would
bring the email package and ssl, about 20 ms here, before the request or while its answer
waits.) A proxy from the environment (https_proxy, http_proxy, no_proxy) is honoured as
requests did: an http:// endpoint through a proxy gets the absolute URL in the request line, an
https:// one a CONNECT tunnel, then TLS to the endpoint itself.
"""

import functools
import os
import socket
import time
from typing import Any, Callable
from urllib.parse import urlsplit

import msgspec

from scv.providers.answer import Answer


# The end of a body a reader stopped short of (a stream's terminating chunk after its last event):
# read when it comes within these, so the connection is kept for the next request.
DRAIN_SECONDS = 1.0
DRAIN_BYTES = 65536


class RequestFailed(Exception):
    """The request could not be sent or its answer not read; the text says why, in a few words."""


class Timeout(RequestFailed):
    pass


def _proxy_for(scheme: str, host: str) -> str | None:
    if not any(name.lower().endswith("_proxy") for name in os.environ):
        return None
    import urllib.request       # only with a proxy variable set: it is not small
    if urllib.request.proxy_bypass_environment(host):
        return None
    return urllib.request.getproxies_environment().get(scheme)


@functools.cache
def _tls_context():
    """The system's roots, and certifi's bundle where it is installed (it comes with requests):
    the roots the provider requests trusted before, so no endpoint that worked stops working."""
    import ssl
    context = ssl.create_default_context()
    try:
        import certifi
    except ImportError:
        return context
    context.load_verify_locations(certifi.where())
    return context


def _address(host: str) -> str | bytes:
    """What getaddrinfo gets: an ASCII name as bytes, so the idna codec is loaded only for a name
    that needs it."""
    return host.encode("ascii") if host.isascii() else host


def _authority(host: str, port: int, default: int) -> str:
    named = f"[{host}]" if ":" in host else host
    return named if port == default else f"{named}:{port}"


class Connection:
    """POSTs JSON to one URL and hands back the streamed response; a connection the server
    closed between two requests is opened again once, without counting as a failure."""

    def __init__(self, url: str, connect_timeout: float, read_timeout: float):
        parts = urlsplit(url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.default_port = 443 if self.scheme == "https" else 80
        self.port = parts.port or self.default_port
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.url = url
        self._sock: socket.socket | None = None
        self._target = self.path      # what the request line names: the absolute URL through an http proxy
        self._closes = False          # the last answer said the server closes the connection after it

    def _open(self) -> socket.socket:
        proxy = _proxy_for(self.scheme, self.host)
        through = urlsplit(proxy) if proxy else None
        host, port = (through.hostname or "", through.port or 80) if through else (self.host, self.port)
        sock = socket.create_connection((_address(host), port), timeout=self.connect_timeout)
        try:
            # As http.client does: a request's last segment is not held back waiting for the
            # server's delayed ACK of the one before (40 ms a request on Linux).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._target = self.url if through is not None and self.scheme != "https" else self.path
            if through is not None and self.scheme == "https":
                self._tunnel(sock)
            if self.scheme == "https":
                sock = _tls_context().wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        return sock

    def _tunnel(self, sock: socket.socket) -> None:
        """CONNECT through the proxy to the endpoint; TLS then runs inside the tunnel."""
        authority = _authority(self.host, self.port, -1)
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode("ascii"))
        answer = Answer(sock, "CONNECT")
        if answer.status != 200:
            raise OSError(f"the proxy answered CONNECT with HTTP {answer.status}")

    def _request(self, data: bytes, headers: dict[str, str]) -> bytes:
        lines = [f"POST {self._target} HTTP/1.1",
                 f"Host: {_authority(self.host, self.port, self.default_port)}",
                 "Accept-Encoding: identity"]
        fields = {**headers, "Content-Type": "application/json", "Content-Length": str(len(data))}
        lines += [f"{name}: {value}" for name, value in fields.items()]
        if any(mark in line for line in lines for mark in "\r\n\0"):
            raise RequestFailed("a header holds a line break")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data

    def post(self, body: dict[str, Any], headers: dict[str, str],
             sent: Callable[[], None] | None = None) -> Answer:
        """The response, its body not yet read; `sent` is called once the request is written."""
        data = msgspec.json.encode(body)
        for fresh in (False, True):
            reused = self._sock is not None and not fresh
            try:
                if self._sock is None or fresh or self._closes:
                    self.close()
                    self._sock = self._open()
                request = self._request(data, headers)
                self._sock.sendall(request)
                if sent is not None:
                    sent()
                self._sock.settimeout(self.read_timeout)
                response = Answer(self._sock)
            except (ConnectionResetError, BrokenPipeError) as exc:     # a close before the answer too
                self.close()
                if reused:
                    continue        # the server dropped an idle keep-alive connection
                raise RequestFailed(type(exc).__name__) from None
            except socket.timeout:
                self.close()
                raise Timeout("timeout") from None
            except OSError as exc:
                self.close()
                raise RequestFailed(type(exc).__name__) from None
            self._closes = response.will_close
            return response
        raise AssertionError("unreachable")

    def finish(self, response: Answer, drain: bool = False) -> None:
        """Done with a response: a body read to its end leaves the connection ready for the next
        request (unless the server said it closes it); one left unread (an error, a cancelled or
        broken stream) closes it. `drain`: the reader stopped at the last thing it needed, so the
        little that is left is read first (see DRAIN_SECONDS)."""
        if drain and not response.isclosed() and not self._closes and self._sock is not None:
            self._drain(response)
        if not response.isclosed() or self._closes:
            response.close()
            self.close()

    def _drain(self, response: Answer) -> None:
        deadline = time.monotonic() + DRAIN_SECONDS
        got = 0
        try:
            while not response.isclosed() and got < DRAIN_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._sock.settimeout(left)
                got += len(response.read1(DRAIN_BYTES - got))
        except OSError:         # a broken answer or a timeout: finish closes the connection
            return

    def socket(self) -> socket.socket | None:
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
