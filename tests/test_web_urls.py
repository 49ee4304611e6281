"""The URL validator: accepted forms, refusals with their sentences, and the properties from
fuzz/ (parsers agree, no numeric host hides as a name)."""

import ipaddress

import pytest

from fuzz import fuzz_urls
from scv.core.web.urls import UrlError, auto_approved, parse_url


@pytest.mark.parametrize("text, scheme, host, port, target", [
    ("https://docs.rs/serde/latest/serde/", "https", "docs.rs", 443, "/serde/latest/serde/"),
    ("HTTP://Example.COM", "http", "example.com", 80, "/"),
    ("http://example.com:8080?q=1#frag", "http", "example.com", 8080, "/?q=1"),
    ("https://example.com/a@b/c?d=e@f", "https", "example.com", 443, "/a@b/c?d=e@f"),
    ("http://93.184.216.34/x", "http", "93.184.216.34", 80, "/x"),
    ("http://[2606:2800:220:1::1]:8443/", "http", "2606:2800:220:1::1", 8443, "/"),
    ("http://[::FFFF:7F00:1]/", "http", "::ffff:7f00:1", 80, "/"),
    ("https://example.com/café?q=naïve", "https", "example.com", 443, "/café?q=naïve"),
    ("http://xn--bcher-kva.example/", "http", "xn--bcher-kva.example", 80, "/"),
    # Internationalised names go as their IDNA 2008 ASCII form; one trailing dot is the same name.
    ("https://bücher.example/", "https", "xn--bcher-kva.example", 443, "/"),
    ("http://BÜCHER.example./x", "http", "xn--bcher-kva.example", 80, "/x"),
    ("https://straße.de/", "https", "xn--strae-oqa.de", 443, "/"),
    ("https://example.com./", "https", "example.com", 443, "/"),
    ("https://example.com.:8443/a", "https", "example.com", 8443, "/a"),
    ("http://93.184.216.34./x", "http", "93.184.216.34", 80, "/x"),
])
def test_accepted_urls(text, scheme, host, port, target):
    url = parse_url(text)
    assert (url.scheme, url.host, url.port, url.target) == (scheme, host, port, target)


def test_the_request_url_is_rebuilt_from_the_parts():
    assert parse_url("HTTPS://Docs.RS:443/x#y").text == "https://docs.rs/x"
    assert parse_url("http://[::1]:8080/a").authority == "[::1]:8080"
    assert parse_url("http://[::1]:8080/a").ip == ipaddress.IPv6Address("::1")


@pytest.mark.parametrize("text, words", [
    ("http://user:pass@example.com/", "credentials"),
    ("http://@example.com/", "credentials"),
    ("http://example.com@127.0.0.1/", "credentials"),
    ("http://127.0.0.1\\@93.184.216.34/", "backslash"),
    ("http:\\\\example.com", "backslash"),
    ("gopher://example.com/", "scheme is gopher"),
    ("data:text/html,hi", "scheme is data"),
    ("http:example.com", "no host"),
    ("http:///path", "no host"),
    ("example.com/path", "no scheme"),
    ("http://exam\tple.com/", "control character"),
    ("http://example.com/a b", "whitespace"),
    ("http://example.com/\x85", "control character"),
    ("http://127.1/", "four decimal numbers"),
    ("http://0x7f.0.0.1/", "four decimal numbers"),
    ("http://2130706433/", "four decimal numbers"),
    ("http://017700000001/", "four decimal numbers"),
    ("http://127.000.000.001/", "four decimal numbers"),
    ("http://1.2.3.256/", "four decimal numbers"),
    ("http://example.0x10/", "four decimal numbers"),
    ("http://127。0。0。1/", "not a valid IDNA 2008 name"),
    ("http://127．0．0．1/", "not a valid IDNA 2008 name"),
    ("http://bu\u0308cher.example/", "Normalization Form C"),    # not NFC: refused, never normalised
    ("http://ﬁ.example/", "not a valid IDNA 2008 name"),           # a compatibility ligature: no UTS 46 mapping
    ("http://a_b.bücher.example/", "not a valid IDNA 2008 name"),
    ("http://١٢٧.0.0.1/", "not a valid IDNA 2008 name"),
    ("http://bü%63her.example/", "percent"),
    ("http://127.1./", "four decimal numbers"),
    ("http://exa%6dple.com/", "percent"),
    ("http://[fe80::1%25eth0]/", "zone"),
    ("http://[::zz]/", "not a valid IPv6"),
    ("http://[::1/", "closing bracket"),
    ("http://[93.184.216.34]/", "do not hold an IPv6"),
    ("http://[::1]x/", "after its IPv6"),
    ("http://a:b:c/", "more than one colon"),
    ("http://example.com:0/", "out of range"),
    ("http://example.com:65536/", "out of range"),
    ("http://example.com:8o/", "not a number"),
    ("http://example.com:８０/", "not a number"),
    ("http://example..com/", "empty label"),
    ("http://example.com../", "empty label"),
    ("http://./", "empty label"),
    ("http://.example.com/", "empty label"),
    ("http://-bad.example/", "invalid label"),
    ("http://under_score.example/", "invalid label"),
    ("http://" + "a" * 64 + ".example/", "invalid label"),
    ("http://example.com/" + "x" * 9000, "at most 8192"),
])
def test_refused_urls_say_why(text, words):
    with pytest.raises(UrlError) as caught:
        parse_url(text)
    assert words in str(caught.value)


def test_auto_approval_needs_https_and_an_exact_listed_host():
    listed = ["docs.rs", "example.com"]
    assert auto_approved(parse_url("https://docs.rs/x"), listed)
    assert auto_approved(parse_url("https://DOCS.rs:443/x"), listed)
    assert auto_approved(parse_url("https://docs.rs:8443/x"), listed)     # the host is what is listed
    assert not auto_approved(parse_url("http://docs.rs/x"), listed)
    assert not auto_approved(parse_url("https://sub.docs.rs/x"), listed)
    assert not auto_approved(parse_url("https://docs.rs.evil.example/x"), listed)
    assert not auto_approved(parse_url("https://docs.rs/x"), [])
    assert auto_approved(parse_url("https://docs.rs./x"), listed)
    assert auto_approved(parse_url("https://BÜCHER.example/"), ["bücher.example"])
    assert auto_approved(parse_url("https://bücher.example/"), ["xn--bcher-kva.example"])
    assert not auto_approved(parse_url("https://bucher.example/"), ["bücher.example"])


def test_an_internationalised_name_is_judged_by_its_ascii_form():
    # idna takes a numeric last label; the resolver could read it as part of an IPv4 address.
    with pytest.raises(UrlError, match=r"'bücher.0x10' \(ASCII form 'xn--bcher-kva.0x10'\) is not an IPv4"):
        parse_url("http://bücher.0x10/")
    assert parse_url("https://bücher.example/a?b").text == "https://xn--bcher-kva.example/a?b"


def test_parsers_agree_on_every_accepted_url():
    fuzz_urls.parsers_agree_on_every_accepted_url()


def test_accepted_names_are_never_read_as_numbers():
    fuzz_urls.accepted_names_are_never_read_as_numbers()


def test_ipv4_spellings_are_refused_or_mean_what_the_resolver_reads():
    fuzz_urls.ipv4_spellings_are_refused_or_mean_what_the_resolver_reads()


def test_internationalised_names_become_their_idna_2008_ascii_form():
    fuzz_urls.internationalised_names_become_their_idna_2008_ascii_form()


def test_the_parser_only_raises_url_errors():
    fuzz_urls.the_parser_only_raises_url_errors()
