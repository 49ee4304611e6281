"""The URL validator: one strict parse whose result is what gets connected to.

Parsers disagree on odd URLs (`http://127.0.0.1\\@example.com/` names one host to urllib and
another to requests), so instead of interpreting odd input, this refuses it: no credentials,
no backslashes, no whitespace or control characters, no percent signs in the host, and no number
that a resolver would read as an IPv4 address unless it is written as four plain decimal parts.
The request line is rebuilt from the parsed parts, so every later parser sees a URL with one
obvious meaning. Nothing is decoded or normalised except the case of the scheme and host, one
trailing dot of the host (`example.com.` is `example.com`: TLS server names and certificates are
written without it), and an internationalised host name, which becomes its IDNA 2008 ASCII form
(`bücher.example` is `xn--bcher-kva.example`) without any UTS 46 mapping, and that ASCII form is
then judged like any other name.
"""

import ipaddress
import re

import msgspec

from scv.core.web import MAX_URL_CHARS

DEFAULT_PORTS = {"http": 80, "https": 443}

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_DOTTED_QUAD = re.compile(r"^(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}$")


class UrlError(ValueError):
    """The URL is refused; the message is one sentence for the model."""


class WebUrl(msgspec.Struct, frozen=True):
    scheme: str            # "http" or "https"
    host: str              # lower-case ASCII name (IDNA form, no trailing dot), dotted-quad IPv4, or IPv6
    port: int
    target: str            # path and query as sent on the request line ("/" at least)
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None   # set when the host is an IP literal

    @property
    def authority(self) -> str:
        """The Host header: the host (IPv6 in brackets) and the port unless it is the default."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def text(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"


def _check_characters(url: str) -> None:
    if len(url) > MAX_URL_CHARS:
        raise UrlError(f"the URL is {len(url)} characters long; web_fetch takes at most {MAX_URL_CHARS}")
    for char in url:
        code = ord(char)
        if code < 0x21 or code == 0x7F or 0x80 <= code < 0xA0:
            raise UrlError("the URL contains whitespace or a control character; percent-encode it (%20 for a "
                           "space) or remove it")
        if char == "\\":
            raise UrlError("the URL contains a backslash, which URL parsers read differently; use / or "
                           "percent-encode it as %5C")
        if 0xD800 <= code < 0xE000:
            raise UrlError("the URL contains an unpaired surrogate character; remove it")


def _ascii_name(host: str) -> str:
    """The IDNA 2008 ASCII form of a non-ASCII name. Strict: labels are split on '.' only (not on
    U+3002 and its kin) and nothing is mapped, so a name that is not already valid is refused."""
    import idna         # late: only a non-ASCII host needs it, and listing tools none
    try:
        return idna.encode(host, strict=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as err:
        reason = str(err).rstrip(".") or "not a valid name"
        raise UrlError(f"the host {host!r} is not ASCII and not a valid IDNA 2008 name ({reason}); write it in its "
                       "ASCII (punycode) form") from None


def host_form(host: str) -> tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
    """Validates a lower-case host (IPv6 literals without brackets); returns the form connected
    to (ASCII, without the one trailing dot a name may have) and its address if it is an IP
    literal. Raises UrlError."""
    if not host:
        raise UrlError("the URL has no host; write it as http://host/path or https://host/path")
    if ":" in host:
        if "%" in host:
            raise UrlError("the URL's IPv6 address has a zone (%); web_fetch cannot use scoped addresses")
        try:
            return host, ipaddress.IPv6Address(host)
        except ValueError:
            raise UrlError(f"[{host}] is not a valid IPv6 address; correct it") from None
    written = host
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]    # one trailing dot: the same absolute name
    if not host:
        raise UrlError(f"the host {written!r} has an empty label (a leading, trailing or doubled dot); remove it")
    if "%" in host:
        raise UrlError("the URL's host contains a percent sign; write the host name without percent-encoding")
    shown = repr(written)
    if not host.isascii():
        host = _ascii_name(host)
        shown = f"{written!r} (ASCII form {host!r})"
    return host, _check_ascii_host(host, shown)


def check_host(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Validates a lower-case host; returns its address if it is an IP literal. Raises UrlError."""
    return host_form(host)[1]


def _check_ascii_host(host: str, shown: str) -> ipaddress.IPv4Address | None:
    """The rules for an ASCII host (no trailing dot); `shown` is the host as written, for messages."""
    labels = host.split(".")
    if _NUMERIC_LABEL.match(labels[-1]):
        # A resolver reads 127.1, 0x7f.1, 017700000001 and 2130706433 as IPv4 addresses: only the
        # one unambiguous spelling is taken.
        try:
            if _DOTTED_QUAD.match(host):
                return ipaddress.IPv4Address(host)
        except ValueError:
            pass
        raise UrlError(f"the host {shown} is not an IPv4 address in the usual form; write IPv4 addresses as "
                       "four decimal numbers from 0 to 255, such as 93.184.216.34")
    if len(host) > 253:
        raise UrlError("the URL's host name is longer than 253 characters; shorten it")
    for label in labels:
        if not label:
            raise UrlError(f"the host {shown} has an empty label (a leading, trailing or doubled dot); remove it")
        if not _LABEL.match(label):
            raise UrlError(f"the host {shown} has an invalid label {label!r}; host names use letters, digits "
                           "and inner hyphens")
    return None


def _split_authority(authority: str) -> tuple[str, str]:
    if "@" in authority:
        raise UrlError("the URL embeds credentials (user:password@); web_fetch sends no credentials, so remove them")
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise UrlError("the URL's IPv6 address has no closing bracket; write it as [2001:db8::1]")
        host, rest = authority[1:end], authority[end + 1:]
        if not host or ":" not in host:
            raise UrlError("the URL's brackets do not hold an IPv6 address; remove them")
        if rest and not rest.startswith(":"):
            raise UrlError("the URL has text after its IPv6 address; write [address]:port")
        return host, rest[1:] if rest else ""
    if "[" in authority or "]" in authority:
        raise UrlError("the URL's host contains a bracket; only IPv6 addresses go in brackets")
    host, colon, port = authority.partition(":")
    if colon and ":" in port:
        raise UrlError("the URL's host has more than one colon; put IPv6 addresses in brackets")
    return host, port


def parse_url(url: str) -> WebUrl:
    """Validates a URL that web_fetch may request. Raises UrlError with one sentence."""
    if not isinstance(url, str):
        raise UrlError("the URL must be a string")
    _check_characters(url)
    match = _SCHEME.match(url)
    if not match:
        raise UrlError("the URL has no scheme; write it as http://host/path or https://host/path")
    scheme = match.group("scheme").lower()
    if scheme not in DEFAULT_PORTS:
        raise UrlError(f"the URL's scheme is {scheme}; web_fetch only fetches http and https URLs")
    rest = url[match.end():]
    if not rest.startswith("//"):
        raise UrlError("the URL has no host after the scheme; write it as http://host/path")
    rest = rest[2:]
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, target = rest[:cut], rest[cut:]
    target = target.partition("#")[0]           # a fragment never goes to the server
    if not target.startswith("/"):
        target = "/" + target
    host, port_text = _split_authority(authority)
    host = host.lower()
    host, ip = host_form(host)
    if port_text:
        if not port_text.isdigit() or not port_text.isascii() or len(port_text) > 5:
            raise UrlError(f"the URL's port {port_text!r} is not a number; write a port from 1 to 65535")
        port = int(port_text)
        if not 1 <= port <= 65535:
            raise UrlError(f"the URL's port {port} is out of range; write a port from 1 to 65535")
    else:
        port = DEFAULT_PORTS[scheme]
    if isinstance(ip, ipaddress.IPv6Address):
        host = str(ip)
    return WebUrl(scheme=scheme, host=host, port=port, target=target, ip=ip)


def auto_approved(url: WebUrl, domains: list[str] | tuple[str, ...]) -> bool:
    """True when the URL is HTTPS and its host is exactly one of `web.auto_approve_domains`."""
    return url.scheme == "https" and url.host in {host_form(domain.lower())[0] for domain in domains}
