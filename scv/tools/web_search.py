"""`web_search`: titles, URLs and snippets from the search service the user configured
(`web.search = "searxng"` or `"brave"`)."""

import os
from typing import Annotated

import msgspec
from msgspec import Meta

from scv.tools.base import Risk, ToolContext, ToolSpec, set_maximum, short
from scv.tools.services import Services

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
SEARCH_TIMEOUT_SECONDS = 30


# The Brave Search API's documented ceiling for `count`.
BRAVE_MAX_COUNT = 20


class WebSearchArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    query: Annotated[str, Meta(min_length=1, max_length=2000, description="What to search the web for.")]
    count: Annotated[int, Meta(ge=1, description=(
        "How many results to return (default and ceiling: web.max_search_results)."))] | None = None


class WebSearchTool(ToolSpec):
    name = "web_search"
    description = ("Search the web with the search service the user configured and return up to `count` results, "
                   "each with a title, URL and snippet. Use web_fetch to read a result.")
    Args = WebSearchArgs
    example = {"query": "tokio latest version", "count": 5}
    executor = "workers.web_search:execute"
    declared_risk = Risk.READ_ONLY      # the query goes only to the service the user chose

    def __init__(self, services: Services | None = None, brave_endpoint: str = BRAVE_ENDPOINT):
        super().__init__(services)
        # Tests point this at a fake Brave server; the registry always uses the real endpoint.
        self._brave_endpoint = brave_endpoint

    def summary(self, args: WebSearchArgs, ctx: ToolContext) -> str:
        return f"search the web ({ctx.config.web.search}) for {short(args.query)}"

    def timeout_seconds(self, args: WebSearchArgs, ctx: ToolContext) -> float:
        return float(min(ctx.config.web.fetch_timeout_seconds, SEARCH_TIMEOUT_SECONDS) + 10)

    def schema(self, ctx: ToolContext) -> dict:
        schema = super().schema(ctx)
        set_maximum(schema, "count", _ceiling(ctx))
        return schema

    def options(self, ctx: ToolContext) -> dict:
        web = ctx.config.web
        options = {"backend": web.search, "timeout_seconds": min(web.fetch_timeout_seconds, SEARCH_TIMEOUT_SECONDS)}
        if web.search == "searxng":
            options["searxng_url"] = web.searxng_url
        else:
            options["brave_endpoint"] = self._brave_endpoint
            options["brave_api_key"] = web.brave_api_key or os.environ.get(web.brave_api_key_env, "")
            options["brave_api_key_env"] = web.brave_api_key_env
        return options

    def worker_args(self, args: WebSearchArgs, ctx: ToolContext) -> dict:
        ceiling = _ceiling(ctx)
        return {"query": args.query, "count": min(args.count or ceiling, ceiling)}


def _ceiling(ctx: ToolContext) -> int:
    """The most results one call returns: web.max_search_results, and for Brave at most the 20
    its API gives per request, so the schema never promises more than a call can bring."""
    ceiling = ctx.config.web.max_search_results
    return min(ceiling, BRAVE_MAX_COUNT) if ctx.config.web.search == "brave" else ceiling
