"""`[web]` in the user's config.toml. Every key is the user's alone: a project file that comes
with a repository must not open the network, pick a search service or widen the allowlist."""

import re
from typing import Annotated, Literal

import msgspec
from msgspec import Meta


MiB = 1 << 20
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class WebConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # "provider": the model endpoint's hosted search; "searxng"/"brave": the web_search tool.
    search: Literal["none", "searxng", "brave", "provider"] = "none"
    searxng_url: str = ""
    brave_api_key: str = ""
    brave_api_key_env: str = "BRAVE_API_KEY"
    max_search_results: Annotated[int, Meta(ge=1, le=50)] = 8
    fetch_max_bytes: Annotated[int, Meta(ge=1024, le=256 * MiB)] = 2 * MiB
    max_redirects: Annotated[int, Meta(ge=0, le=30)] = 5
    fetch_timeout_seconds: Annotated[int, Meta(ge=1, le=3600)] = 30
    allow_private_addresses: bool = False
    auto_approve_domains: list[str] = []

    def __post_init__(self):
        # msgspec turns these ValueErrors into validation errors naming the `web` table.
        if self.search == "searxng" or self.auto_approve_domains:
            self._check_addresses()
        if not re.match(_ENV_NAME, self.brave_api_key_env):
            raise ValueError(f"brave_api_key_env {self.brave_api_key_env!r} is not a variable name")

    def _check_addresses(self) -> None:
        # The URL rules load only for a table with a URL or hosts to check (they bring idna).
        from scv.core.web.urls import UrlError, check_host, parse_url
        if self.search == "searxng":
            if not self.searxng_url:
                raise ValueError('search = "searxng" needs searxng_url, such as "http://127.0.0.1:8888"')
            try:
                parse_url(self.searxng_url)
            except UrlError as err:
                raise ValueError(f"searxng_url is not usable: {err}") from None
        for domain in self.auto_approve_domains:
            if domain != domain.lower() or "/" in domain or ":" in domain:
                raise ValueError(f"auto_approve_domains entry {domain!r} must be a lower-case host name "
                                 "such as \"docs.rs\", without scheme, port or path")
            try:
                check_host(domain)
            except UrlError as err:
                raise ValueError(f"auto_approve_domains entry {domain!r} is not a host name: {err}") from None
