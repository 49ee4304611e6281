"""Hosted web search (`web.search = "provider"`): the tool entry a Responses request offers,
and the `Sources:` list appended to an answer for the `url_citation` annotations it does not
already link.

`append_sources(text, annotations)` is pure: it takes the answer text and the annotation
objects of that output text as the Responses API returns them (dicts with "type",
"url", "title"), and returns the text to show.
"""

import re
from typing import Any, Iterable, Mapping

HOSTED_SEARCH_TOOL = {"type": "web_search"}
MAX_TITLE_CHARS = 200

# Characters that may continue a URL: a URL counts as linked only where the text does not go
# on with a longer URL (so https://a.example/page2 does not link https://a.example/page).
_URL_CONTINUES = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'*+,;=%]"


def hosted_tools(search: str) -> list[dict[str, str]]:
    """The hosted tools to add to each Responses request for the configured `web.search`."""
    return [dict(HOSTED_SEARCH_TOOL)] if search == "provider" else []


def _ends_at(text: str, index: int) -> bool:
    """True when no longer URL goes on at `index` (sentence punctuation before a space counts
    as an end)."""
    following = text[index:index + 1]
    if not following or not re.match(_URL_CONTINUES, following):
        return True
    after = text[index + 1:index + 2]
    return following in ".,;:!?" and (not after or after.isspace())


def _linked(text: str, url: str) -> bool:
    for candidate in {url, url.rstrip("/") or url}:
        start = text.find(candidate)
        while start >= 0:
            after = start + len(candidate)
            if _ends_at(text, after) or text[after:after + 1] == "/" and _ends_at(text, after + 1):
                return True
            start = text.find(candidate, start + 1)
    return False


def _title(raw: Any, url: str) -> str:
    title = " ".join(str(raw).split()) if isinstance(raw, str) else ""
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1] + "…"
    return title if title and title != url else ""


def append_sources(text: str, annotations: Iterable[Mapping[str, Any]]) -> str:
    """`text` plus a "Sources:" list of the http(s) `url_citation` URLs it does not already
    link, in the order first cited, each once; `text` unchanged when there are none."""
    missing: dict[str, str] = {}
    for note in annotations:
        if not isinstance(note, Mapping) or note.get("type") != "url_citation":
            continue
        url = note.get("url")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            continue
        if any(ord(c) < 0x21 or c == "\x7f" for c in url) or url in missing or _linked(text, url):
            continue
        missing[url] = _title(note.get("title"), url)
    if not missing:
        return text
    lines = [f"- {title}: {url}" if title else f"- {url}" for url, title in missing.items()]
    return text.rstrip() + "\n\nSources:\n" + "\n".join(lines)
