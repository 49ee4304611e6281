"""The pinned-address transport in this process, against real loopback servers (plain and
TLS), with a stub resolver standing in for DNS."""

import ipaddress
import socket
import threading

import pytest
import requests
import urllib3

from scv.core.web.urls import parse_url
from tests.web_fakes import LoopbackServer, Reply, begin_text_body, free_port, make_certificates, tls_context
from workers.runtime import ToolFailure
from workers.web_fetch import FetchSettings, fetch, render
from workers.web_transport import AddressPolicy, PinnedAdapter, checked_addresses, resolve

PAGE = b"<html><body><p>Served over the pinned connection, with enough words to read.</p></body></html>"


def stub_resolver(table: dict[str, list[str]], calls: list[str] | None = None):
    def lookup(host: str, port: int):
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise ToolFailure(f"the host {host} cannot be resolved")
        return [ipaddress.ip_address(a) for a in table[host]]
    return lookup


def settings(port: int | None = None, **extra) -> FetchSettings:
    ports = frozenset({port}) if port else frozenset()
    return FetchSettings(max_bytes=1 << 20, max_redirects=5, timeout_seconds=10,
                         policy=AddressPolicy(loopback_ports=ports), **extra)


@pytest.fixture
def server():
    srv = LoopbackServer({"/": Reply(body=PAGE)})
    yield srv
    srv.close()


@pytest.mark.parametrize("addresses, why", [
    (["10.0.0.7"], "private"),
    (["93.184.216.34", "169.254.169.254"], "link-local"),     # one bad address refuses the name
    (["2606:2800:220:1::1", "fd00::1"], "unique-local"),
    (["::ffff:192.168.1.1"], "private"),
    (["64:ff9b::a9fe:a9fe"], "link-local"),
])
def test_a_name_that_resolves_to_a_refused_address_is_refused(addresses, why):
    url = parse_url("https://innocent.example/page")
    with pytest.raises(ToolFailure) as caught:
        checked_addresses(url, AddressPolicy(), stub_resolver({"innocent.example": addresses}))
    assert why in str(caught.value) and "innocent.example resolves to" in str(caught.value)


def test_public_addresses_pass_and_are_returned_in_order():
    url = parse_url("https://innocent.example/")
    found = checked_addresses(url, AddressPolicy(), stub_resolver({"innocent.example": ["93.184.216.34",
                                                                                       "2606:2800:220:1::1"]}))
    assert [str(a) for a in found] == ["93.184.216.34", "2606:2800:220:1::1"]


def test_the_real_resolver_reads_localhost_as_loopback():
    assert ipaddress.ip_address("127.0.0.1") in resolve("localhost", 80)
    with pytest.raises(ToolFailure, match="loopback"):
        checked_addresses(parse_url("http://localhost/"), AddressPolicy())


def test_the_connection_uses_the_checked_address_and_never_looks_the_name_up_again(server, monkeypatch):
    calls: list[str] = []
    real = socket.getaddrinfo
    lookups: list[str] = []

    def guarded(host, *args, **kwargs):
        lookups.append(str(host))
        if host == "rebind.example":
            return real("10.9.9.9", *args, **kwargs)   # what a rebinding DNS server would answer now
        return real(host, *args, **kwargs)
    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    resolver = stub_resolver({"rebind.example": ["127.0.0.1"]}, calls)
    url = parse_url(f"http://rebind.example:{server.port}/")
    fetched = fetch(url, settings(server.port), resolver=resolver)
    assert fetched.status == 200 and "pinned connection" in render(fetched)
    assert calls == ["rebind.example"]
    assert "rebind.example" not in lookups
    assert server.seen[0].headers["host"] == f"rebind.example:{server.port}"


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1::1"])
def test_the_adapter_pools_connections_by_address_and_keeps_the_name_for_tls(address):
    adapter = PinnedAdapter(ipaddress.ip_address(address), "example.com")
    request = requests.Request("GET", "https://example.com/x").prepare()
    pool = adapter.get_connection_with_tls_context(request, True)
    connection = pool._new_conn()            # built, not connected
    assert (pool.host, pool.port) == (address, 443)
    assert connection.server_hostname == connection.assert_hostname == "example.com"


def test_a_refused_connection_is_one_sentence():
    port = free_port()
    with pytest.raises(ToolFailure, match=r"^cannot reach 127.0.0.1: connecting to 127.0.0.1 failed "
                                          r"\(Connection refused\)$"):
        fetch(parse_url(f"http://127.0.0.1:{port}/"), settings(port))


def test_redirects_are_resolved_and_checked_hop_by_hop(server):
    server.routes["/hop"] = Reply(302, headers={"Location": f"http://evil.example:{server.port}/"})
    calls: list[str] = []
    resolver = stub_resolver({"good.example": ["127.0.0.1"], "evil.example": ["192.168.0.10"]}, calls)
    with pytest.raises(ToolFailure, match="evil.example resolves to 192.168.0.10, a private address"):
        fetch(parse_url(f"http://good.example:{server.port}/hop"), settings(server.port), resolver=resolver)
    assert calls == ["good.example", "evil.example"]


def test_a_redirect_from_an_auto_approved_fetch_must_stay_on_listed_https_hosts(server):
    server.routes["/docs"] = Reply(302, headers={"Location": f"http://127.0.0.1:{server.port}/elsewhere"})
    server.routes["/to-https"] = Reply(302, headers={"Location": "https://unlisted.example/"})
    restricted = settings(server.port, redirect_hosts=("docs.example",))
    with pytest.raises(ToolFailure) as caught:
        fetch(parse_url(server.url("/docs")), restricted)
    assert f"http://127.0.0.1:{server.port}/elsewhere" in str(caught.value)
    assert "web.auto_approve_domains" in str(caught.value)
    with pytest.raises(ToolFailure, match="https://unlisted.example/, which is not an auto-approved"):
        fetch(parse_url(server.url("/to-https")), restricted)
    assert [seen.path for seen in server.seen] == ["/docs", "/to-https"]


def test_proxy_variables_are_ignored(server, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")       # nothing listens on the discard port
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    fetched = fetch(parse_url(server.url("/")), settings(server.port))
    assert fetched.status == 200


# --- TLS: the connection goes to the IP, the certificate is checked against the name ----------

@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls"), "pinned.example")


@pytest.fixture
def tls_server(tls_files):
    context = tls_context(tls_files[1], tls_files[2])
    names: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    srv = LoopbackServer({"/": Reply(body=PAGE)}, tls=context)
    srv.sni_names = names
    yield srv
    srv.close()


def test_tls_goes_to_the_pinned_address_with_the_name_for_sni_and_the_certificate(tls_server, tls_files):
    resolver = stub_resolver({"pinned.example": ["127.0.0.1"]})
    url = parse_url(f"https://pinned.example:{tls_server.port}/")
    fetched = fetch(url, settings(tls_server.port, verify=str(tls_files[0])), resolver=resolver)
    assert fetched.status == 200 and "pinned connection" in render(fetched)
    assert tls_server.sni_names == ["pinned.example"]
    assert tls_server.seen[0].headers["host"] == f"pinned.example:{tls_server.port}"


def test_a_trailing_dot_is_the_same_name_for_sni_the_certificate_and_the_host_header(tls_server, tls_files):
    calls: list[str] = []
    resolver = stub_resolver({"pinned.example": ["127.0.0.1"]}, calls)
    url = parse_url(f"https://pinned.example.:{tls_server.port}/")
    fetched = fetch(url, settings(tls_server.port, verify=str(tls_files[0])), resolver=resolver)
    assert fetched.status == 200 and calls == ["pinned.example"]
    assert tls_server.sni_names == ["pinned.example"]
    assert tls_server.seen[0].headers["host"] == f"pinned.example:{tls_server.port}"


def test_an_internationalised_name_is_looked_up_and_sent_in_its_ascii_form(server):
    calls: list[str] = []
    resolver = stub_resolver({"xn--bcher-kva.example": ["127.0.0.1"]}, calls)
    fetched = fetch(parse_url(f"http://bücher.example:{server.port}/"), settings(server.port), resolver=resolver)
    assert fetched.status == 200 and "pinned connection" in render(fetched)
    assert calls == ["xn--bcher-kva.example"]
    assert server.seen[0].headers["host"] == f"xn--bcher-kva.example:{server.port}"


def test_tls_fails_when_the_certificate_does_not_name_the_host(tls_server, tls_files):
    resolver = stub_resolver({"other.example": ["127.0.0.1"]})
    url = parse_url(f"https://other.example:{tls_server.port}/")
    with pytest.raises(ToolFailure, match=r"the TLS connection to other.example failed \(hostname 'other.example' doesn't "
                                          r"match 'pinned.example'\)"):
        fetch(url, settings(tls_server.port, verify=str(tls_files[0])), resolver=resolver)


def test_tls_fails_against_an_untrusted_authority(tls_server):
    resolver = stub_resolver({"pinned.example": ["127.0.0.1"]})
    url = parse_url(f"https://pinned.example:{tls_server.port}/")
    with pytest.raises(ToolFailure, match="the TLS connection to pinned.example failed .*certificate verify failed"):
        fetch(url, settings(tls_server.port), resolver=resolver)


def test_the_download_never_reads_past_the_byte_limit(server, monkeypatch):
    server.routes["/big"] = Reply(body=b"0123456789" * 50_000, content_type="text/plain")
    asked: list[int] = []
    real_read1 = urllib3.response.HTTPResponse.read1

    def counting(self, amt=None, decode_content=None):
        data = real_read1(self, amt, decode_content=decode_content)
        asked.append(len(data))
        return data
    monkeypatch.setattr(urllib3.response.HTTPResponse, "read1", counting)
    limited = FetchSettings(max_bytes=100_000, max_redirects=0, timeout_seconds=10,
                            policy=AddressPolicy(loopback_ports=frozenset({server.port})))
    fetched = fetch(parse_url(server.url("/big")), limited)
    assert fetched.cut and len(fetched.body) == 100_000
    assert sum(asked) == 100_001            # one byte past the limit tells that the body goes on


def test_a_body_that_trickles_past_the_deadline_fails_the_fetch(server):
    # One byte before the deadline, the rest after it: the fetch fails instead of waiting for the rest.
    released = threading.Event()

    def trickle(handler):
        begin_text_body(handler, 1001)
        released.wait(0.8)
        handler.wfile.write(b"x")
        handler.wfile.flush()
        released.wait(1.2)
        handler.wfile.write(b"y" * 1000)
        handler.wfile.flush()
    server.routes["/trickle"] = trickle
    short = FetchSettings(max_bytes=1 << 20, max_redirects=0, timeout_seconds=1.5,
                          policy=AddressPolicy(loopback_ports=frozenset({server.port})))
    try:
        with pytest.raises(ToolFailure, match=r"web\.fetch_timeout_seconds"):
            fetch(parse_url(server.url("/trickle")), short)
    finally:
        released.set()
