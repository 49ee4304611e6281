"""Executor of `web_fetch`: GET one URL hop by hop (each redirect target validated, resolved
and checked like the first URL), then return one page of its text."""

import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urljoin

import msgspec

from scv.core.web.urls import UrlError, WebUrl, auto_approved, parse_url
from workers.runtime import ToolFailure, WorkerContext
from workers.web_body import kind_of, media_type, read_body, sniff, text_of
from workers.web_cancel import CancelWatch
from workers.web_html import html_to_text
from workers.web_transport import AddressPolicy, checked_addresses, open_response, resolve

REDIRECT_STATUSES = {301, 302, 303, 307, 308}
FIELD_ROOM = 320            # the names and values of the fields added last: range, next_offset and note
MIN_PAGE_BYTES = 256
HEADER_CHARS = 200          # at most this much of the content type and the reason phrase


@dataclass(frozen=True)
class FetchSettings:
    max_bytes: int
    max_redirects: int
    timeout_seconds: float
    policy: AddressPolicy = field(default_factory=AddressPolicy)
    # Set when the call runs as read_only because its host is auto-approved: every redirect must
    # stay on these HTTPS hosts.
    redirect_hosts: tuple[str, ...] | None = None
    verify: bool | str = True


@dataclass
class Fetched:
    url: WebUrl
    status: int
    reason: str
    content_type: str
    kind: str                   # "html" or "text"
    body: bytes
    cut: bool
    redirects: list[str]


def _redirect_target(current: WebUrl, location: str) -> WebUrl:
    try:
        return parse_url(urljoin(current.text, location.strip()))
    except (UrlError, ValueError) as err:
        raise ToolFailure(f"{current.text} redirected to {location[:300]!r}, which web_fetch refuses: {err}",
                          redirect_to=location[:2000]) from None


def fetch(start: WebUrl, settings: FetchSettings, resolver=resolve, cancelled: Callable[[], bool] = lambda: False,
          progress: Callable[[str], None] = lambda line: None,
          attach: Callable[[object], None] = lambda response: None) -> Fetched:
    deadline = time.monotonic() + settings.timeout_seconds
    url, redirects = start, []
    while True:
        if cancelled():
            raise ToolFailure("the call was cancelled")
        response = open_response(url, checked_addresses(url, settings.policy, resolver), deadline, settings.verify)
        attach(response)
        location = response.headers.get("Location")
        if response.status_code in REDIRECT_STATUSES and location:
            response.close()
            target = _redirect_target(url, location)
            if len(redirects) >= settings.max_redirects:
                raise ToolFailure(f"{start.text} redirected more than {settings.max_redirects} times "
                                  f"(web.max_redirects); the next target was {target.text}", redirect_to=target.text)
            if settings.redirect_hosts is not None and not auto_approved(target, settings.redirect_hosts):
                raise ToolFailure(f"{url.text} redirected to {target.text}, which is not an auto-approved HTTPS host "
                                  "(web.auto_approve_domains); call web_fetch with that URL to fetch it, with "
                                  "approval", redirect_to=target.text)
            redirects.append(target.text)
            progress(f"redirected to {target.text}")
            url = target
            continue
        content_type = response.headers.get("Content-Type", "").strip()
        kind = kind_of(content_type) if content_type else "unknown"
        if kind == "binary":
            response.close()
            raise ToolFailure(f"{url.text} is {media_type(content_type)}, a binary type; web_fetch returns only "
                              "text, HTML and JSON and did not download it", url=url.text,
                              status=response.status_code, content_type=content_type)
        body = read_body(response, settings.max_bytes, deadline, cancelled)
        if kind == "unknown":
            kind = sniff(body.data, kind)
            if kind == "binary":
                raise ToolFailure(f"{url.text} returned binary data ({content_type or 'no content type'}); "
                                  "web_fetch returns only text, HTML and JSON", url=url.text,
                                  status=response.status_code, content_type=content_type)
        return Fetched(url=url, status=response.status_code, reason=response.reason or "",
                       content_type=content_type, kind=kind, body=body.data, cut=body.cut, redirects=redirects)


def page_end(text: str, offset: int, budget: int) -> int:
    """Where the page starting at `offset` ends: at most `budget` UTF-8 bytes, preferably at
    the end of a line in its last quarter."""
    window = text[offset:offset + budget]
    encoded = window.encode("utf-8", "surrogatepass")
    if len(encoded) > budget:
        window = encoded[:budget].decode("utf-8", "ignore")
    end = offset + len(window)
    if end < len(text):
        line_end = window.rfind("\n", len(window) * 3 // 4)
        if line_end > 0:
            end = offset + line_end + 1
    return max(end, min(offset + 1, len(text)))     # every page moves on by one character at least


def render(fetched: Fetched) -> str:
    text = text_of(fetched.body, fetched.content_type, fetched.kind == "html")
    return html_to_text(text, fetched.url.text) if fetched.kind == "html" else text


def execute(args: dict, ctx: WorkerContext) -> dict:
    options = ctx.options
    try:
        start = parse_url(args["url"])
    except UrlError as err:
        raise ToolFailure(str(err)) from None
    hosts = args.get("redirect_hosts")
    settings = FetchSettings(
        max_bytes=options["fetch_max_bytes"], max_redirects=options["max_redirects"],
        timeout_seconds=options["fetch_timeout_seconds"],
        policy=AddressPolicy(allow_private=options["allow_private_addresses"],
                             loopback_ports=frozenset(options.get("loopback_ports", ()))),
        redirect_hosts=tuple(hosts) if hosts is not None else None, verify=options.get("ca_bundle") or True)
    with CancelWatch(ctx.token) as watch:
        fetched = fetch(start, settings, cancelled=watch.cancelled, progress=ctx.progress, attach=watch.attach)
    text = render(fetched)
    offset, total = args.get("offset", 0), len(text)
    if offset and offset >= total:
        raise ToolFailure(f"offset {offset} is past the end of the text, which has {total} characters; "
                          "ask for a smaller offset")
    # The server writes the content type and the reason phrase: a hostile one must not fill the result.
    value: dict = {"url": fetched.url.text, "status": fetched.status,
                   "content_type": fetched.content_type[:HEADER_CHARS], "range": ""}
    if fetched.redirects:
        value["redirected_from"] = start.text
    if fetched.cut:
        value["download_note"] = (f"only the first {settings.max_bytes} bytes were downloaded "
                                  "(web.fetch_max_bytes); the text ends early")
    failure = ""
    if fetched.status >= 400:
        reason = " ".join(fetched.reason.split())[:HEADER_CHARS]
        failure = f"{fetched.url.text} answered HTTP {fetched.status}{' ' + reason if reason else ''}"
    # The fields around the content, and the error sentence of a failure, count against the output limit too.
    around = len(msgspec.json.encode(value)) + len(msgspec.json.encode(failure)) + FIELD_ROOM
    budget = max(MIN_PAGE_BYTES, ctx.call.output_limit_bytes - around)
    end = page_end(text, offset, budget)
    for _ in range(3):
        # Quotes, backslashes and control characters take more room once the result is JSON.
        excess = len(msgspec.json.encode(text[offset:end])) - 2 - budget
        if excess <= 0:
            break
        end = page_end(text, offset, max(1, budget - excess))
    value["range"] = f"characters {offset}-{end} of {total}"
    value["content"] = text[offset:end]
    if end < total:
        value["next_offset"] = end
        value["note"] = f"the text continues: call web_fetch with offset {end} for the next part"
    if failure:
        raise ToolFailure(failure, **value)
    return value
