"""Properties of the web validators: the URL parser and the address policy.

Run briefly by tests/test_web_urls.py and tests/test_web_addresses.py, and for longer by
bin/fuzz. The URL properties compare the parse with what the HTTP stack and the system
resolver would make of the same text, since disagreement between those is the bypass.
"""

import ipaddress
import socket
import urllib.parse

import idna
import requests
import urllib3.util
from hypothesis import given
from hypothesis import strategies as st

from scv.core.web.addresses import refusal
from scv.core.web.urls import UrlError, WebUrl, parse_url

_TRICKY = "aAz09xX.-_@:[]%\\/?#=&+~ \t\r\n\x00\x7f\u00a0\u3002\uff0e\u0131\u212a\ud800é"
schemes = st.sampled_from(["http", "https", "HTTP", "HtTpS", "ftp", "file", "javascript", "http+unix", ""])
separators = st.sampled_from(["://", ":/", ":", ":///", "://\\", "", "//"])
# Names with letters beyond ASCII, some valid IDNA 2008 labels, some not, some with a trailing dot.
_WORLD = "abcz09-.éüßçøıāłñ́é̈。．‍א١ＡÜﬁ"
idn_hosts = st.one_of(
    st.sampled_from(["bücher.example", "straße.de", "Bücher.Example.", "пример.испытание", "例え.テスト", "example.com.",
                     "xn--bcher-kva.example.", "bücher.example..", "ﬁ.example", "bücher.example"]),
    st.text(alphabet=_WORLD, min_size=1, max_size=20),
)
hosts = st.one_of(
    st.text(alphabet=_TRICKY, max_size=24),
    idn_hosts,
    st.from_regex(r"\A[a-z0-9-]{1,10}(\.[a-z0-9-]{1,10}){0,3}\Z"),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
)
ports = st.one_of(st.just(""), st.integers(0, 70000).map(lambda p: f":{p}"), st.text(alphabet=":0123456789a", max_size=7))
paths = st.text(alphabet=_TRICKY + "/", max_size=20)
# Mostly well-formed URLs with a little damage, so that many are accepted and compared.
_PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F)) + "é\u00a0\u3002"
plausible = st.builds(
    lambda s, h, p, lead, r: f"{s}://{h}{p}{lead}{r}",
    st.sampled_from(["http", "https", "HTTP", "HTTPS"]),
    st.one_of(st.from_regex(r"\A[a-zA-Z0-9-]{1,12}(\.[a-zA-Z0-9-]{1,12}){0,3}\Z"), st.ip_addresses(v=4).map(str),
              st.ip_addresses(v=6).map(lambda a: f"[{a}]"), st.text(alphabet=_TRICKY, min_size=1, max_size=12),
              idn_hosts),
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    st.sampled_from(["/", "?", "#", "", "/@", "/\\"]),
    st.text(alphabet=_PRINTABLE, max_size=30))
urls = st.one_of(plausible,
                 st.builds(lambda s, sep, h, p, r: f"{s}{sep}{h}{p}{r}", schemes, separators, hosts, ports, paths),
                 st.text(max_size=60))


def _try(text: str) -> WebUrl | None:
    try:
        return parse_url(text)
    except UrlError:
        return None


@given(urls)
def parsers_agree_on_every_accepted_url(text):
    """Whatever is accepted means the same host and port to urllib, urllib3 and requests."""
    parsed = _try(text)
    if parsed is None:
        return
    assert parsed.scheme in ("http", "https")
    rebuilt = parsed.text
    assert parse_url(rebuilt) == parsed
    split = urllib.parse.urlsplit(rebuilt)
    assert split.hostname == parsed.host and (split.port or parsed.port) == parsed.port
    u3 = urllib3.util.parse_url(rebuilt)
    assert u3.host.strip("[]").lower() == parsed.host and (u3.port or parsed.port) == parsed.port
    assert u3.auth is None and split.username is None and split.password is None
    prepared = requests.Request("GET", rebuilt).prepare()
    again = urllib3.util.parse_url(prepared.url)
    assert again.host.strip("[]").lower() == parsed.host and again.auth is None


@given(urls)
def accepted_names_are_never_read_as_numbers(text):
    """A host taken as a name is not one that the C resolver would read as an IPv4 address."""
    parsed = _try(text)
    if parsed is None or parsed.ip is not None:
        return
    try:
        socket.inet_aton(parsed.host)
    except OSError:
        pass
    else:
        raise AssertionError(f"{parsed.host!r} was taken as a name but inet_aton reads it as an address")


@given(idn_hosts, st.sampled_from(["http", "https"]))
def internationalised_names_become_their_idna_2008_ascii_form(host, scheme):
    """An accepted name is ASCII; written with other letters, it is exactly their IDNA 2008 form
    (which decodes back to what was written, less case and one trailing dot), never a mapping."""
    parsed = _try(f"{scheme}://{host}/")
    if parsed is None:
        return
    assert parsed.host.isascii() and not parsed.host.endswith(".")
    written = host.lower().removesuffix(".")
    if not written.isascii():
        assert idna.decode(parsed.host) == written
        assert parsed.host == idna.encode(written, strict=True).decode("ascii")
    else:
        assert parsed.host == written


def _spell(value: int, parts: int, bases: list[int]) -> str:
    if parts == 1:
        fields = [value]
    elif parts == 2:
        fields = [value >> 24, value & 0xFFFFFF]
    elif parts == 3:
        fields = [value >> 24, (value >> 16) & 0xFF, value & 0xFFFF]
    else:
        fields = [(value >> shift) & 0xFF for shift in (24, 16, 8, 0)]
    out = []
    for field, base in zip(fields, bases):
        out.append(hex(field) if base == 16 else ("0" + oct(field)[2:]) if base == 8 else str(field))
    return ".".join(out)


@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.lists(st.sampled_from([8, 10, 16]), min_size=4, max_size=4))
def ipv4_spellings_are_refused_or_mean_what_the_resolver_reads(value, parts, bases):
    spelled = _spell(value, parts, bases)
    parsed = _try(f"http://{spelled}/")
    if parsed is not None:
        assert parsed.ip == ipaddress.IPv4Address(value) == ipaddress.IPv4Address(socket.inet_aton(spelled))


def _embeddings(address: ipaddress.IPv4Address) -> list[ipaddress.IPv6Address]:
    value = int(address)
    return [ipaddress.IPv6Address((0xFFFF << 32) | value),                # ::ffff:a.b.c.d
            ipaddress.IPv6Address((0x64FF9B << 96) | value),              # 64:ff9b::a.b.c.d
            ipaddress.IPv6Address((0x2002 << 112) | (value << 80) | 1)]   # 2002:aabb:ccdd::1


@given(st.ip_addresses(v=4))
def ipv6_forms_are_judged_by_the_ipv4_they_carry(address):
    inner = refusal(address)
    for form in _embeddings(address):
        assert (refusal(form) is None) == (inner is None), form


@given(st.ip_addresses(v=4))
def accepted_ipv4_is_global_unicast(address):
    if refusal(address) is None:
        assert address.is_global and not address.is_multicast and not address.is_private


@given(st.ip_addresses(v=6))
def accepted_ipv6_is_global_unicast_or_carries_a_public_ipv4(address):
    if refusal(address) is not None:
        return
    carried = address.ipv4_mapped or (address.sixtofour if address in ipaddress.IPv6Network("2002::/16") else None)
    if address in ipaddress.IPv6Network("64:ff9b::/96"):
        carried = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if carried is not None:
        assert refusal(carried) is None
        return
    assert address in ipaddress.IPv6Network("2000::/3")
    assert address.teredo is None and not address.is_link_local and not address.is_multicast
    for network in ("2001:db8::/32", "3fff::/20", "2001::/23"):
        assert address not in ipaddress.IPv6Network(network)


numeric_hosts = st.lists(st.integers(0, 1000).map(str), min_size=1, max_size=5).map(lambda p: f"http://{'.'.join(p)}/")


@given(st.one_of(urls, numeric_hosts, st.from_regex(r"\Ahttps?://[0-9a-fx.\[\]:]{1,24}/\Z")))
def the_parser_only_raises_url_errors(text):
    try:
        parse_url(text)
    except UrlError as err:
        message = str(err)
        assert message and "\n" not in message


HARNESSES = [parsers_agree_on_every_accepted_url, accepted_names_are_never_read_as_numbers,
             ipv4_spellings_are_refused_or_mean_what_the_resolver_reads, ipv6_forms_are_judged_by_the_ipv4_they_carry,
             accepted_ipv4_is_global_unicast, accepted_ipv6_is_global_unicast_or_carries_a_public_ipv4,
             internationalised_names_become_their_idna_2008_ascii_form, the_parser_only_raises_url_errors]
