"""HTML to readable text: readability-lxml picks the main content, then the tree is walked
(iteratively, so deep nesting costs no recursion) into plain text in which each link is
followed by a numbered reference `[n]`; the list of links comes at the end."""

import re
from urllib.parse import urljoin, urlsplit

from lxml import etree
from lxml import html as lxml_html
from readability import Document
from readability.readability import Unparseable

from workers.runtime import ToolFailure

# Navigation menus are not the main content, even where readability keeps them.
_SKIP = {"script", "style", "noscript", "template", "head", "title", "nav", "svg", "math", "iframe", "object",
         "embed", "canvas", "select", "button", "input", "textarea"}
_BLOCK = {"p", "div", "section", "article", "header", "footer", "main", "aside", "nav", "ul", "ol", "dl",
          "table", "thead", "tbody", "tfoot", "tr", "blockquote", "figure", "figcaption", "form", "fieldset",
          "address", "details", "summary", "dt", "dd", "center", "body", "html"}
_HEADINGS = {"h1": "# ", "h2": "## ", "h3": "### ", "h4": "#### ", "h5": "##### ", "h6": "###### "}
_CELLS = {"td", "th"}
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0]+")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")


class _Renderer:
    def __init__(self, base_url: str):
        self.base_url = base_url
        self.parts: list[str] = []
        self.links: dict[str, int] = {}
        self.pre = 0

    def text(self, value: str | None) -> None:
        if not value:
            return
        if not self.pre:
            value = _SPACES.sub(" ", value)
            if not self.parts or self.parts[-1].endswith("\n"):
                value = value.lstrip(" ")
        if value:
            self.parts.append(value)

    def block(self) -> None:
        self.parts.append("\n\n")

    def link_number(self, href: str | None) -> int | None:
        if not href:
            return None
        href = href.strip()
        if not href or href.startswith("#"):
            return None
        try:
            target = urljoin(self.base_url, href)
            if urlsplit(target).scheme not in ("http", "https"):
                return None
        except ValueError:
            return None
        target = target.split("#", 1)[0] or target
        return self.links.setdefault(target, len(self.links) + 1)

    def walk(self, root) -> None:
        walker = etree.iterwalk(root, events=("start", "end"))
        for event, element in walker:
            tag = element.tag if isinstance(element.tag, str) else None
            if event == "start":
                if tag is None or tag in _SKIP:
                    walker.skip_subtree()
                    continue
                if tag in _HEADINGS:
                    self.block()
                    self.parts.append(_HEADINGS[tag])
                elif tag == "li":
                    self.parts.append("\n- ")
                elif tag == "br":
                    self.parts.append("\n")
                elif tag == "pre":
                    self.block()
                    self.pre += 1
                elif tag == "hr":
                    self.parts.append("\n\n---\n\n")
                elif tag == "img":
                    alt = (element.get("alt") or "").strip()
                    if alt:
                        self.text(f"[image: {alt}]")
                elif tag in _BLOCK:
                    self.block()
                self.text(element.text)
                continue
            if tag is not None and tag not in _SKIP:
                if tag == "a":
                    number = self.link_number(element.get("href"))
                    if number is not None:
                        self.parts.append(f" [{number}]")
                elif tag == "pre":
                    self.pre -= 1
                    self.block()
                elif tag in _CELLS:
                    self.parts.append(" | ")
                elif tag in _HEADINGS or tag in _BLOCK:
                    self.block()
            self.text(element.tail)

    def result(self) -> str:
        body = "".join(self.parts)
        body = _BLANKS.sub("\n\n", _TRAILING.sub("\n", body)).strip()
        if self.links:
            listing = "\n".join(f"[{number}] {url}" for url, number in self.links.items())
            body = f"{body}\n\nLinks:\n{listing}"
        return body


def _render(root, base_url: str) -> str:
    renderer = _Renderer(base_url)
    renderer.walk(root)
    return renderer.result()


def _whole_page(markup: str, base_url: str) -> str:
    root = lxml_html.document_fromstring(markup)
    body = root.find("body")
    return _render(body if body is not None else root, base_url)


def _convert(markup: str, base_url: str) -> str:
    try:
        document = Document(markup)
        main = document.summary(html_partial=True)
        title = " ".join((document.title() or "").split())
    except Unparseable:
        # readability gives up on some pages (no body, odd markup): keep the whole page instead.
        return _whole_page(markup, base_url)
    text = _render(lxml_html.fromstring(main), base_url) if main.strip() else ""
    if not text:
        text = _whole_page(markup, base_url)
    if title and title != "[no-title]" and not text.startswith(f"# {title}"):
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
