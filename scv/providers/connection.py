"""One keep-alive HTTP(S) connection to a model endpoint, on the standard library's http.client.

`scv exec` sends its first model request before anything heavy is imported: http.client costs
a fraction of requests and urllib3 (and chardet) at start-up, and a streamed POST needs nothing
more. A proxy from the environment (https_proxy, http_proxy, no_proxy) is honoured as requests
did; the rarely set variables are only read by urllib when one of them is present.
"""

import functools
import http.client
import json
import os
import socket
from typing import Any, Callable
from urllib.parse import urlsplit


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


class Connection:
    """POSTs JSON to one URL and hands back the streamed response; a connection the server
    closed between two requests is opened again once, without counting as a failure."""

    def __init__(self, url: str, connect_timeout: float, read_timeout: float):
        parts = urlsplit(url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.scheme == "https" else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.url = url
        self._conn: http.client.HTTPConnection | None = None
        self._target = self.path      # what the request line names: the absolute URL through an http proxy

    def _open(self) -> http.client.HTTPConnection:
        proxy = _proxy_for(self.scheme, self.host)
        target = urlsplit(proxy) if proxy else None
        host, port = (target.hostname or "", target.port or 80) if target else (self.host, self.port)
        if self.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=self.connect_timeout,
                                                                           context=_tls_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.connect_timeout)
        self._target = self.path
        if target is not None and self.scheme == "https":
            conn.set_tunnel(self.host, self.port)       # CONNECT, then TLS to the endpoint itself
        elif target is not None:
            self._target = self.url                     # a plain-HTTP proxy forwards the absolute URL
        return conn

    def post(self, body: dict[str, Any], headers: dict[str, str],
             sent: Callable[[], None] | None = None) -> http.client.HTTPResponse:
        """The response, its body not yet read; `sent` is called once the request is written."""
        data = json.dumps(body).encode()
        fields = {**headers, "Content-Type": "application/json", "Content-Length": str(len(data))}
        for fresh in (False, True):
            reused = self._conn is not None and not fresh
            if self._conn is None or fresh:
                self.close()
                self._conn = self._open()
            try:
                self._conn.request("POST", self._target, body=data, headers=fields)
                if sent is not None:
                    sent()
                if self._conn.sock is not None:
                    self._conn.sock.settimeout(self.read_timeout)
                return self._conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self.close()
                if reused:
                    continue        # the server dropped an idle keep-alive connection
                raise RequestFailed(type(exc).__name__) from None
            except socket.timeout:
                self.close()
                raise Timeout("timeout") from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise RequestFailed(type(exc).__name__) from None
        raise AssertionError("unreachable")

    def finish(self, response: http.client.HTTPResponse) -> None:
        """Done with a response: a body read to its end leaves the connection ready for the next
        request; one left unread (an error, a cancelled or broken stream) closes it."""
        if not response.isclosed():
            response.close()
            self.close()

    def socket(self) -> socket.socket | None:
        return self._conn.sock if self._conn is not None else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
