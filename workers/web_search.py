"""Executor of `web_search`: one query to SearXNG's JSON API or the Brave Search API.

The service is the one the user configured, so its address is not held to web_fetch's public
address rule (SearXNG usually runs on the user's own machine or network). Failures carry a
hint for the usual setup mistakes: JSON output disabled in SearXNG, a missing or rejected
Brave key, rate limits.
"""

import html
import re
from urllib.parse import urljoin

import msgspec
import requests

from workers.runtime import ToolFailure, WorkerContext
from workers.web_transport import USER_AGENT

MAX_RESPONSE_BYTES = 4 << 20
SNIPPET_CHARS = 600
NOTE_ROOM = 160             # the "more" flag and the note that says how many results were left out
_TAGS = re.compile(r"<[^>]{0,200}>")


class SearxResult(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    content: str | None = None


class SearxResponse(msgspec.Struct):
    results: list[SearxResult] = []
    unresponsive_engines: list[list[str] | str] = []


class BraveResult(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    description: str | None = None


class BraveWeb(msgspec.Struct):
    results: list[BraveResult] = []


class BraveResponse(msgspec.Struct):
    web: BraveWeb | None = None


class BraveErrorDetail(msgspec.Struct):
    code: str = ""
    detail: str = ""


class BraveError(msgspec.Struct):
    error: BraveErrorDetail | None = None


def _clean(text: str | None, limit: int) -> str:
    flat = " ".join(html.unescape(_TAGS.sub("", text or "")).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _get(service: str, url: str, params: dict, headers: dict, timeout: float) -> tuple[int, str, bytes]:
    """One GET without redirects, proxies or credentials from the environment; the body bounded."""
    session = requests.Session()
    session.trust_env = False
    try:
        with session.get(url, params=params, headers={"User-Agent": USER_AGENT, **headers}, timeout=timeout,
                         allow_redirects=False, stream=True) as response:
            body = bytearray()
            for chunk in response.iter_content(65536):
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise ToolFailure(f"{service} sent more than {MAX_RESPONSE_BYTES} bytes; check the service URL")
            location = response.headers.get("Location", "")
            target = urljoin(url, location) if location else ""
            return response.status_code, target, bytes(body)
    except requests.exceptions.Timeout:
        raise ToolFailure(f"{service} did not answer within {timeout:g} s; check that it is running and reachable",
                          hint=f"check that {service} at {url} is up") from None
    except requests.exceptions.RequestException as err:
        reason = str(err.args[0] if err.args else err).split(">: ", 1)[-1][:200]
        raise ToolFailure(f"cannot reach {service} at {url} ({reason})",
                          hint=f"check that {service} is running and that its URL is right") from None
    finally:
        session.close()


def _searxng(query: str, count: int, options: dict) -> list[dict]:
    base = options["searxng_url"].rstrip("/")
    status, target, body = _get("SearXNG", f"{base}/search", {"q": query, "format": "json"},
                                {"Accept": "application/json"}, options["timeout_seconds"])
    if 300 <= status < 400:
        raise ToolFailure(f"SearXNG redirected the search to {target or 'another address'} (HTTP {status})",
                          hint="set web.searxng_url to the address SearXNG is served from, without a redirect")
    if status == 403:
        raise ToolFailure("SearXNG refused the JSON format (HTTP 403)",
                          hint="enable JSON output: add json to search.formats in SearXNG's settings.yml")
    if status == 429:
        raise ToolFailure("SearXNG's rate limiter refused the search (HTTP 429)",
                          hint="turn off server.limiter in SearXNG's settings.yml, or allow this client in its "
                               "bot detection")
    if status != 200:
        raise ToolFailure(f"SearXNG answered HTTP {status}", hint="check web.searxng_url and SearXNG's log")
    try:
        decoded = msgspec.json.decode(body, type=SearxResponse)
    except msgspec.MsgspecError:
        raise ToolFailure("SearXNG did not answer with search results in JSON",
                          hint="check that web.searxng_url is SearXNG's root address and that json is in "
                               "search.formats in its settings.yml") from None
    results = [{"title": _clean(r.title, 300), "url": r.url, "snippet": _clean(r.content, SNIPPET_CHARS)}
               for r in decoded.results if r.url][:count]
    if not results and decoded.unresponsive_engines:
        # SearXNG answers an empty page when its engines failed; say so instead of "no results".
        engines = ", ".join(" ".join(e) if isinstance(e, list) else str(e) for e in decoded.unresponsive_engines[:8])
        raise ToolFailure(f"SearXNG found nothing because its engines did not answer ({engines[:300]})",
                          hint="try again later, or enable other engines in SearXNG's settings.yml")
    return results


def _brave(query: str, count: int, options: dict) -> list[dict]:
    key, variable = options["brave_api_key"], options["brave_api_key_env"]
    if not key:
        raise ToolFailure("no Brave Search API key is configured",
                          hint=f"set web.brave_api_key in config.toml or the {variable} variable")
    status, _, body = _get("the Brave Search API", options["brave_endpoint"], {"q": query, "count": min(count, 20)},
                           {"Accept": "application/json", "X-Subscription-Token": key}, options["timeout_seconds"])
    if status != 200:
        try:
            detail = msgspec.json.decode(body, type=BraveError).error or BraveErrorDetail()
        except msgspec.MsgspecError:
            detail = BraveErrorDetail()
        said = f" ({detail.code}: {detail.detail})" if detail.code else ""
        if status in (401, 403) or "TOKEN" in detail.code.upper():
            raise ToolFailure(f"the Brave Search API rejected the key (HTTP {status}){said}",
                              hint=f"check web.brave_api_key or the {variable} variable against the key in your "
                                   "Brave Search API dashboard")
        if status == 429:
            raise ToolFailure(f"the Brave Search API refused the search: rate limit or quota reached{said}",
                          hint="wait and try again, or check the plan of the key")
        raise ToolFailure(f"the Brave Search API answered HTTP {status}{said}",
                          hint="check the query and the Brave Search API's status")
    try:
        decoded = msgspec.json.decode(body, type=BraveResponse)
    except msgspec.MsgspecError:
        raise ToolFailure("the Brave Search API sent a response that is not search results in JSON",
                          hint="try again later") from None
    results = decoded.web.results if decoded.web else []
    return [{"title": _clean(r.title, 300), "url": r.url, "snippet": _clean(r.description, SNIPPET_CHARS)}
            for r in results if r.url][:count]


def execute(args: dict, ctx: WorkerContext) -> dict:
    options = ctx.options
    backend, query, count = options["backend"], args["query"], args["count"]
    search = _searxng if backend == "searxng" else _brave
    results = search(query, count, options)
    value = {"backend": backend, "query": query, "results": results}
    if not results:
        value["note"] = "no results; try other words"
        return value
    # Like every result, this one stays within tools.output_limit_bytes: the last results give way.
    dropped = 0
    while value["results"] and len(msgspec.json.encode(value)) + NOTE_ROOM > ctx.call.output_limit_bytes:
        value["results"].pop()
        dropped += 1
    if dropped:
        value["more"] = True
        value["note"] = (f"{dropped} more result{'s' if dropped > 1 else ''} did not fit in the output limit "
                         "(tools.output_limit_bytes); ask for a smaller count or use other words")
    return value
