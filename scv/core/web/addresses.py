"""Which IP addresses web_fetch may connect to: written down range by range.

`ipaddress` flags are not a policy (their meaning moved between CPython releases, and they call
NAT64 of loopback or IPv4-mapped CGNAT "global"), so the refused ranges are listed here
explicitly. IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by the IPv4
address they carry; the other embedding forms (compatible, translated, Teredo) are refused.
For IPv6 only global unicast (2000::/3) and the judged embedding forms can pass at all.
"""

import ipaddress
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address


def _v4(rows: list[tuple[str, str]]) -> list[tuple[IPv4Network, str]]:
    return [(IPv4Network(net), why) for net, why in rows]


def _v6(rows: list[tuple[str, str]]) -> list[tuple[IPv6Network, str]]:
    return [(IPv6Network(net), why) for net, why in rows]


# The IANA IPv4 special-purpose registry, less nothing: every block in it that is not a
# globally reachable unicast destination.
REFUSED_V4 = _v4([
    ("0.0.0.0/8", "an unspecified (\"this network\") address"),   # 0.0.0.0 reaches local listeners
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "a reserved (IETF protocol assignment) address"),
    ("192.0.2.0/24", "a documentation address"),
    ("192.88.99.0/24", "a reserved (6to4 relay anycast) address"),
    ("192.168.0.0/16", "a private address"),
    ("198.18.0.0/15", "a reserved (benchmarking) address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),                      # includes 255.255.255.255
])

GLOBAL_UNICAST_V6 = IPv6Network("2000::/3")
MAPPED_V6 = IPv6Network("::ffff:0:0/96")
NAT64_V6 = IPv6Network("64:ff9b::/96")
SIX_TO_FOUR_V6 = IPv6Network("2002::/16")

# Outside 2000::/3 everything is refused; these name the common cases for the message.
NAMED_V6 = _v6([
    ("::/128", "an unspecified address"),
    ("::1/128", "a loopback address"),
    ("::ffff:0:0:0/96", "an IPv4-translated address"),
    ("::/96", "an IPv4-compatible address"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("100::/64", "a discard-only address"),
    ("fc00::/7", "a unique-local address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
])

# Inside 2000::/3, the blocks that are not global destinations.
REFUSED_GLOBAL_V6 = _v6([
    ("2001::/32", "a Teredo tunnel address"),
    ("2001::/23", "a reserved (IETF protocol assignment) address"),
    ("2001:db8::/32", "a documentation address"),
    ("3fff::/20", "a documentation address"),
])


def _embedded_v4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address a mapped, NAT64 or 6to4 address carries, if it is one of those."""
    value = int(address)
    if address in MAPPED_V6 or address in NAT64_V6:
        return IPv4Address(value & 0xFFFFFFFF)
    if address in SIX_TO_FOUR_V6:
        return IPv4Address((value >> 80) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why web_fetch must not connect to `address` (a phrase such as "a loopback address"),
    or None when it is a public address."""
    if isinstance(address, IPv4Address):
        for network, why in REFUSED_V4:
            if address in network:
                return why
        return None
    if address.scope_id:
        return "a scoped (link-local) address"
    carried = _embedded_v4(address)
    if carried is not None:
        inner = refusal(carried)
        return f"an IPv6 form of {carried}, {inner}" if inner else None
    if address not in GLOBAL_UNICAST_V6:
        for network, why in NAMED_V6:
            if address in network:
                return why
        return "a reserved IPv6 address"
    for network, why in REFUSED_GLOBAL_V6:
        if address in network:
            return why
    return None


def parse_ip(text: str) -> IPAddress | None:
    """An address as the resolver returns it (IPv6 possibly with a %scope), or None."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


LOOPBACK = ipaddress.IPv4Address("127.0.0.1")


@dataclass(frozen=True)
class AddressPolicy:
    allow_private: bool = False
    # Test-only: 127.0.0.1 at exactly these ports. Only a test constructs the web_fetch spec with
    # ports; no configuration key or tool argument reaches this.
    loopback_ports: frozenset[int] = field(default_factory=frozenset)

    def judge(self, address: IPAddress, port: int) -> str | None:
        """Why `address` is refused, or None when web_fetch may connect to it."""
        if self.allow_private:
            return None
        if address == LOOPBACK and port in self.loopback_ports:
            return None
        return refusal(address)


def refused_literal(url, policy: AddressPolicy) -> str | None:
    """The sentence refusing a URL whose host is an IP literal web_fetch must not reach, or None.
    Names are judged by the worker after its one lookup; a literal needs no lookup, so it is
    judged before approval too and the user is never asked about a fetch that cannot run."""
    if url.ip is None:
        return None
    why = policy.judge(url.ip, url.port)
    if not why:
        return None
    return (f"{url.host} is {why}; web_fetch only reaches public addresses (the user can allow others with "
            "web.allow_private_addresses)")
