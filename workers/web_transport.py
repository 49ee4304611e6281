"""The pinned-address HTTP transport of web_fetch.

A host name is resolved once, every address is judged by `scv.core.web.addresses`, and the
connection goes to a checked address itself: `PinnedAdapter` hands urllib3 a pool for the IP,
while the TLS server name, the certificate host name check and the Host header stay the
name. urllib3 therefore never looks the name up again, so it cannot be rebound between check
and connect. Requests are prepared without a Session (no cookie jar, no netrc, no proxy or
CA variables from the environment) and sent by the adapter, which never follows redirects.
"""

import ipaddress
import re
import socket
import time

import requests
from requests.adapters import HTTPAdapter

import scv
from scv.core.web.addresses import AddressPolicy, IPAddress, parse_ip
from scv.core.web.urls import WebUrl
from workers.runtime import ToolFailure

USER_AGENT = f"scv/{scv.__version__}"
ACCEPT = "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5"
def resolve(host: str, port: int) -> list[IPAddress]:
    """The one lookup of a host name: every address the system resolver gives for it."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except socket.gaierror as err:
        raise ToolFailure(f"the host {host} cannot be resolved ({err.strerror}); check the URL") from None
    except (UnicodeError, OSError) as err:
        raise ToolFailure(f"the host {host} cannot be resolved ({err}); check the URL") from None
    found: list[IPAddress] = []
    for family, _, _, _, sockaddr in infos:
        address = parse_ip(sockaddr[0])
        if address is None:
            raise ToolFailure(f"the host {host} resolved to {sockaddr[0]!r}, which is not an IP address")
        if family == socket.AF_INET6 and len(sockaddr) > 3 and sockaddr[3] and not address.scope_id:
            address = ipaddress.IPv6Address(f"{address}%{sockaddr[3]}")
        if address not in found:
            found.append(address)
    if not found:
        raise ToolFailure(f"the host {host} resolved to no address; check the URL")
    return found


def checked_addresses(url: WebUrl, policy: AddressPolicy, resolver=resolve) -> list[IPAddress]:
    """The addresses to connect to for `url`; refuses the URL if any of them is refused."""
    addresses = [url.ip] if url.ip is not None else resolver(url.host, url.port)
    for address in addresses:
        why = policy.judge(address, url.port)
        if why:
            what = f"{url.host} is" if url.ip is not None else f"{url.host} resolves to {address},"
            raise ToolFailure(f"{what} {why}; web_fetch only reaches public addresses (the user can allow "
                              "others with web.allow_private_addresses)", refused_url=url.text)
    return addresses


class PinnedAdapter(HTTPAdapter):
    """Connects to one checked IP address for a request whose URL names the host."""

    def __init__(self, address: IPAddress, host: str):
        self._address = str(address)
        self._host = host
        super().__init__(max_retries=0, pool_connections=1, pool_maxsize=1)

    def _pool(self, scheme: str, port: int, pool_kwargs: dict):
        if scheme == "https":
            pool_kwargs = {**pool_kwargs, "server_hostname": self._host, "assert_hostname": self._host}
        return self.poolmanager.connection_from_host(host=self._address, port=port, scheme=scheme,
                                                     pool_kwargs=pool_kwargs)

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        return self._pool(host_params["scheme"], host_params["port"], pool_kwargs)

    def get_connection(self, url, proxies=None):     # requests before 2.32.2
        parsed = requests.utils.urlparse(url)
        return self._pool(parsed.scheme, parsed.port or (443 if parsed.scheme == "https" else 80), {})


def response_socket(response: requests.Response) -> socket.socket | None:
    """The socket a streamed response is read from (urllib3 keeps it on the connection)."""
    connection = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
    return getattr(connection, "sock", None)


_SSL_REASON = re.compile(r"\[SSL: [A-Z0-9_]+\] ([^\"()]+)")
_NAME_REASON = re.compile(r"(hostname '[^']+' doesn't match [^)\"]+)")
_OS_REASON = re.compile(r"\[Errno -?\d+\] ([^'\"()\]]+)")


def _describe(err: Exception) -> str:
    """The useful end of a requests/urllib3 error, whose text nests several layers of repr."""
    text = str(err).replace("\\", "")
    for pattern in (_NAME_REASON, _SSL_REASON, _OS_REASON):
        found = pattern.search(text)
        if found:
            return found.group(1).strip(" .")
    return text.rsplit(": ", 1)[-1].strip(" .()'\"")[:200]


def open_response(url: WebUrl, addresses: list[IPAddress], deadline: float, verify: bool | str = True
                  ) -> requests.Response:
    """GET `url` from the first of `addresses` that accepts a connection; the body is not read."""
    headers = {"Host": url.authority, "User-Agent": USER_AGENT, "Accept": ACCEPT,
               "Accept-Encoding": "gzip, deflate", "Connection": "close"}
    request = requests.Request("GET", url.text, headers=headers).prepare()
    last_problem = ""
    for address in addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        adapter = PinnedAdapter(address, url.host)
        try:
            return adapter.send(request, stream=True, timeout=(left, left), verify=verify, proxies=None)
        except requests.exceptions.SSLError as err:
            raise ToolFailure(f"the TLS connection to {url.host} failed ({_describe(err)}); web_fetch needs a "
                              "certificate valid for the host name") from None
        except requests.exceptions.ConnectTimeout:
            last_problem = f"connecting to {address} timed out"
        except requests.exceptions.ReadTimeout:
            raise ToolFailure(f"{url.host} did not answer before the deadline (web.fetch_timeout_seconds)") from None
        except requests.exceptions.ConnectionError as err:
            last_problem = f"connecting to {address} failed ({_describe(err)})"
        except requests.exceptions.RequestException as err:
            raise ToolFailure(f"the request to {url.text} failed: {_describe(err)}") from None
    if not last_problem:
        raise ToolFailure(f"{url.host} did not answer before the deadline (web.fetch_timeout_seconds)")
    raise ToolFailure(f"cannot reach {url.host}: {last_problem}")
