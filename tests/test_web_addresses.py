"""The address policy: every trap in SECURITY-NOTES.md, then the properties from fuzz/."""

import ipaddress

import pytest

from fuzz import fuzz_urls
from scv.core.web.addresses import refusal


@pytest.mark.parametrize("text, why", [
    ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
    ("100.64.0.1", "shared"), ("100.127.255.254", "shared"),
    ("169.254.169.254", "link-local"), ("169.254.0.1", "link-local"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"), ("192.0.0.8", "reserved"),
    ("198.18.0.1", "benchmarking"), ("192.88.99.1", "6to4 relay"),
    ("192.0.2.1", "documentation"), ("198.51.100.7", "documentation"), ("203.0.113.9", "documentation"),
    # IPv6, including the forms `ipaddress` calls global on CPython 3.11-3.13
    ("::", "unspecified"), ("::1", "loopback"),
    ("64:ff9b::7f00:1", "loopback"), ("::127.0.0.1", "IPv4-compatible"), ("fec0::1", "site-local"),
    ("3fff::1", "documentation"), ("::ffff:100.64.0.1", "shared"), ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "link-local"), ("::ffff:10.0.0.1", "private"), ("::ffff:0:7f00:1", "translated"),
    ("2002:7f00:1::1", "loopback"), ("2002:a9fe:a9fe::", "link-local"), ("2002:c000:0201::1", "documentation"),
    ("2001::1", "Teredo"), ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"), ("2001:2::1", "reserved"),
    ("2001:db8::1", "documentation"), ("64:ff9b:1::1", "local-use NAT64"), ("100::1", "discard"),
    ("fc00::1", "unique-local"), ("fd12:3456::1", "unique-local"), ("fe80::1", "link-local"),
    ("fe80::1%2", "scoped"), ("ff02::1", "multicast"), ("ff0e::1", "multicast"), ("4000::1", "reserved IPv6"),
    ("5f00::1", "reserved IPv6"),
])
def test_refused_addresses_name_their_range(text, why):
    found = refusal(ipaddress.ip_address(text))
    assert found is not None and why in found


@pytest.mark.parametrize("text", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0",
                                  "172.15.255.255", "172.32.0.0", "169.253.255.255", "223.255.255.255",
                                  "2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001:82a::200e",
                                  "::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2002:5db8:d822::1"])
def test_public_addresses_pass(text):
    assert refusal(ipaddress.ip_address(text)) is None


def test_ipv6_forms_are_judged_by_the_ipv4_they_carry():
    fuzz_urls.ipv6_forms_are_judged_by_the_ipv4_they_carry()


def test_accepted_ipv4_is_global_unicast():
    fuzz_urls.accepted_ipv4_is_global_unicast()


def test_accepted_ipv6_is_global_unicast_or_carries_a_public_ipv4():
    fuzz_urls.accepted_ipv6_is_global_unicast_or_carries_a_public_ipv4()
