"""HTML to readable text: readability-lxml picks the main content, then the tree is walked
(iteratively, so deep nesting costs no recursion) into plain text in which each link is
followed by a numbered reference `[n]`; the list of links comes at the end."""

import html
import logging
import re
from urllib.parse import urljoin, urlsplit

from lxml import etree
from lxml import html as lxml_html
from readability import Document
from readability.readability import Unparseable

from workers.runtime import ToolFailure

# readability logs a traceback before raising Unparseable; the failure is handled here instead.
logging.getLogger("readability.readability").setLevel(logging.CRITICAL)

# Navigation menus are not the main content, even where readability keeps them.
_SKIP = {"script", "style", "noscript", "template", "head", "title", "nav", "svg", "math", "iframe", "object",
         "embed", "canvas", "select", "button", "input", "textarea"}
_BLOCK = {"p", "div", "section", "article", "header", "footer", "main", "aside", "nav", "ul", "ol", "dl",
          "table", "thead", "tbody", "tfoot", "tr", "blockquote", "figure", "figcaption", "form", "fieldset",
          "address", "details", "summary", "dt", "dd", "center", "body", "html"}
_HEADINGS = {"h1": "# ", "h2": "## ", "h3": "### ", "h4": "#### ", "h5": "##### ", "h6": "###### "}
_CELLS = {"td", "th"}
# Linear on any input: no part can run past the next "<" or ">", so a page of a million
# unclosed "<title>" tags costs one pass instead of one pass per tag.
_TITLE = re.compile(r"<title[^<>]*>([^<]*)</title", re.I)


class _Renderer:
    """Collects the text in `parts`, tracking how many newlines end it so far, so that blocks
    never stack more than one blank line and no pass over the whole text is needed after."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.parts: list[str] = []
        self.newlines = 2                            # the start counts as after a blank line
        self.links: dict[str, int] = {}
        self.targets: dict[str, str | None] = {}     # href as written -> absolute URL (or None)
        self.pre = 0

    def text(self, value: str | None) -> None:
        if not value:
            return
        if self.pre:
            self.parts.append(value)
            stripped = value.rstrip("\n")
            self.newlines = len(value) - len(stripped) + (self.newlines if not stripped else 0)
            return
        words = value.split()
        if not words:
            if self.newlines == 0 and not self.parts[-1].endswith(" "):
                self.parts.append(" ")
            return
        collapsed = " ".join(words)
        if value[0].isspace() and self.newlines == 0 and not self.parts[-1].endswith(" "):
            collapsed = " " + collapsed
        if value[-1].isspace():
            collapsed += " "
        self.parts.append(collapsed)
        self.newlines = 0

    def mark(self, value: str) -> None:
        """Markup of our own (a list bullet, a link number): never at the start of a line's spaces."""
        self.parts.append(value)
        self.newlines = 0

    def line_break(self, wanted: int) -> None:
        """Ends the output with `wanted` newlines (1: new line, 2: blank line) unless it already does."""
        if self.newlines >= wanted:
            return
        if self.newlines == 0 and self.parts[-1].endswith(" "):
            self.parts[-1] = self.parts[-1].rstrip(" ")
        self.parts.append("\n" * (wanted - self.newlines))
        self.newlines = wanted

    def link_number(self, href: str | None) -> int | None:
        if not href:
            return None
        if href in self.targets:
            target = self.targets[href]
        else:
            target = self.targets[href] = self._target(href)
        return None if target is None else self.links.setdefault(target, len(self.links) + 1)

    def _target(self, href: str) -> str | None:
        href = href.strip()
        if not href or href.startswith("#"):
            return None
        try:
            target = urljoin(self.base_url, href)
            if urlsplit(target).scheme not in ("http", "https"):
                return None
        except ValueError:
            return None
        return target.split("#", 1)[0] or target

    def walk(self, root) -> None:
        walker = etree.iterwalk(root, events=("start", "end"))
        for event, element in walker:
            tag = element.tag if isinstance(element.tag, str) else None
            if event == "start":
                if tag is None or tag in _SKIP:
                    walker.skip_subtree()
                    continue
                if tag in _BLOCK:
                    self.line_break(2)
                elif tag in _HEADINGS:
                    self.line_break(2)
                    self.mark(_HEADINGS[tag])
                elif tag == "li":
                    self.line_break(1)
                    self.mark("- ")
                elif tag == "br":
                    self.line_break(min(self.newlines + 1, 2))
                elif tag == "pre":
                    self.line_break(2)
                    self.pre += 1
                elif tag == "hr":
                    self.line_break(2)
                    self.mark("---")
                    self.line_break(2)
                elif tag == "img":
                    alt = (element.get("alt") or "").strip()
                    if alt:
                        self.text(f"[image: {alt}]")
                self.text(element.text)
                continue
            if tag is not None and tag not in _SKIP:
                if tag == "a":
                    number = self.link_number(element.get("href"))
                    if number is not None:
                        if self.parts and self.parts[-1].endswith(" "):
                            self.parts[-1] = self.parts[-1].rstrip(" ")
                        self.mark(f" [{number}]")
                elif tag == "pre":
                    self.pre -= 1
                    self.line_break(2)
                elif tag in _CELLS:
                    self.mark(" | ")
                elif tag in _BLOCK or tag in _HEADINGS:
                    self.line_break(2)
            self.text(element.tail)

    def result(self) -> str:
        body = "".join(self.parts).strip()
        if self.links:
            listing = "\n".join(f"[{number}] {url}" for url, number in self.links.items())
            body = f"{body}\n\nLinks:\n{listing}"
        return body


def _render(root, base_url: str) -> str:
    renderer = _Renderer(base_url)
    renderer.walk(root)
    return renderer.result()


def _whole_page(markup: str, base_url: str) -> str:
    try:
        root = lxml_html.document_fromstring(markup)
    except etree.ParserError:
        return ""               # lxml's word for a page with no elements at all
    body = root.find("body")
    return _render(body if body is not None else root, base_url)


class _TextDocument(Document):
    """readability through its documented hook: `get_clean_html` turns the cleaned article
    tree into the result of `summary()`, so the tree becomes text directly instead of being
    serialised to HTML and parsed again."""

    def __init__(self, markup: str, base_url: str):
        super().__init__(markup)
        self.base_url = base_url

    def get_clean_html(self) -> str:
        return _render(self.html, self.base_url)


def _convert(markup: str, base_url: str) -> str:
    try:
        text = _TextDocument(markup, base_url).summary(html_partial=True)
    except Unparseable:
        # readability gives up on some pages (no body, odd markup): keep the whole page instead.
        return _whole_page(markup, base_url)
    if not text:
        text = _whole_page(markup, base_url)
    # readability's own title() parses the whole page again; the <title> element is enough.
    found = _TITLE.search(markup, 0, 1 << 20)
    title = " ".join(html.unescape(found.group(1)).split())[:300] if found else ""
    if title and not text.startswith(f"# {title}"):
        return f"# {title}\n\n{text}" if text else f"# {title}"
    return text


def html_to_text(markup: str, base_url: str) -> str:
    """The page's title and main content as plain text with numbered links."""
    if not markup.strip():
        return ""
    try:
        return _convert(markup, base_url)
    except RecursionError:
        raise ToolFailure("the page is nested too deeply to convert to text") from None
    except (etree.LxmlError, ValueError) as err:
        # libxml2 reports an allocation failure under the worker's memory ceiling as a parse error.
        raise ToolFailure(f"the page could not be parsed as HTML ({err}); a very large or hostile page can also "
                          "exhaust the worker's memory (tools.worker_memory_mb)") from None
