"""`web_fetch`: one public http(s) URL as readable text."""

from typing import Annotated

import msgspec
from msgspec import Meta

from scv.core.errors import RefusedError
from scv.core.web import MAX_URL_CHARS
from scv.tools.base import Risk, ToolContext, ToolSpec
from scv.tools.services import Services

# Time for the conversion to text after the download's own deadline.
CONVERSION_SECONDS = 60


class WebFetchArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: Annotated[str, Meta(min_length=1, max_length=MAX_URL_CHARS,
                             description="The http or https URL to fetch.")]
    offset: Annotated[int, Meta(ge=0, description=(
        "First character of the page's text to return (default 0); a longer page's result names the "
        "offset of its next part."))] = 0


class WebFetchTool(ToolSpec):
    name = "web_fetch"
    description = ("Fetch one public http or https URL with GET and return it as text: HTML becomes readable plain "
                   "text with numbered link references and the links listed at the end; JSON and other text pass "
                   "through; binary types are refused. The result starts with the final URL, the status, the "
                   "content type and the character range returned; a longer page gives next_offset for its next "
                   "part. An HTTP error status gives a failed result with the body.")
    Args = WebFetchArgs
    example = {"url": "https://docs.rs/serde/latest/serde/", "offset": 0}
    executor = "workers.web_fetch:execute"
    declared_risk = Risk.NETWORK

    def __init__(self, services: Services | None = None, loopback_ports: frozenset[int] = frozenset(),
                 ca_bundle: str | None = None):
        super().__init__(services)
        # Test-only: lets this spec's calls reach 127.0.0.1 at these ports (servers a test
        # started), and trust a test certificate authority. The registry builds the spec with
        # neither, and no configuration key or argument sets them.
        self._loopback_ports = frozenset(loopback_ports)
        self._ca_bundle = ca_bundle

    def check(self, args: WebFetchArgs, ctx: ToolContext) -> None:
        from scv.core.web.urls import UrlError, parse_url       # the validators: on the first URL
        try:
            url = parse_url(args.url)
        except UrlError as err:
            raise RefusedError(f"web_fetch refused the URL: {err}") from None
        from scv.core.web.addresses import AddressPolicy, refused_literal     # its tables: on the first URL
        policy = AddressPolicy(allow_private=ctx.config.web.allow_private_addresses,
                               loopback_ports=self._loopback_ports)
        refused = refused_literal(url, policy)
        if refused:
            raise RefusedError(f"web_fetch refused the URL: {refused}")

    def _auto_approved(self, args: WebFetchArgs, ctx: ToolContext) -> bool:
        from scv.core.web.urls import auto_approved, parse_url
        return auto_approved(parse_url(args.url), ctx.config.web.auto_approve_domains)

    def risk(self, args: WebFetchArgs, ctx: ToolContext) -> Risk:
        return Risk.READ_ONLY if self._auto_approved(args, ctx) else Risk.NETWORK

    def summary(self, args: WebFetchArgs, ctx: ToolContext) -> str:
        # The full URL: it can carry data to whoever runs the host.
        page = f" from character {args.offset}" if args.offset else ""
        from scv.core.web.urls import parse_url
        host = parse_url(args.url).host
        # An internationalised name is shown as connected to too: look-alike letters hide in it.
        named = f" (host {host})" if host not in args.url.lower() else ""
        return f"fetch {args.url}{named}{page}"

    def timeout_seconds(self, args: WebFetchArgs, ctx: ToolContext) -> float:
        return float(ctx.config.web.fetch_timeout_seconds + CONVERSION_SECONDS)

    def options(self, ctx: ToolContext) -> dict:
        web = ctx.config.web
        options = {"fetch_max_bytes": web.fetch_max_bytes, "max_redirects": web.max_redirects,
                   "fetch_timeout_seconds": web.fetch_timeout_seconds,
                   "allow_private_addresses": web.allow_private_addresses}
        if self._loopback_ports:
            options["loopback_ports"] = sorted(self._loopback_ports)
        if self._ca_bundle:
            options["ca_bundle"] = self._ca_bundle
        return options

    def worker_args(self, args: WebFetchArgs, ctx: ToolContext) -> dict:
        value = {"url": args.url, "offset": args.offset}
        if self._auto_approved(args, ctx):
            # It runs without approval, so its redirects may only reach other listed HTTPS hosts.
            value["redirect_hosts"] = list(ctx.config.web.auto_approve_domains)
        return value
