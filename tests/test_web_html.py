"""HTML to text (workers.web_html) and body decoding (workers.web_body), in this process."""

from fuzz import fuzz_web_text
from workers.web_body import charset_of, kind_of, sniff, text_of
from workers.web_html import html_to_text

FILLER = ("This paragraph carries enough words, commas, and clauses, so that readability scores it as the "
          "main content of the page, which it is.")


def article(inner: str, title: str = "A page") -> str:
    return (f"<html><head><title>{title}</title></head><body><div class='content'><p>{FILLER}</p>{inner}"
            f"<p>{FILLER}</p></div></body></html>")


def test_structure_survives_as_plain_text():
    text = html_to_text(article("<h2>Install</h2><p>Steps, in order, as follows:</p><ul><li>first <b>step</b>, with words, and more words, and commas, "
                                "to keep it</li><li>second, also, with some words</li></ul>"
                                "<pre>fn main() {\n    run();\n}</pre><p>line one<br>line two</p><hr>"
                                "<p>tab\tand   spaces\n collapse</p>"), "https://example.com/")
    assert text.startswith("# A page\n\n" + FILLER)
    assert "## Install\n\nSteps, in order, as follows:\n\n- first step, with words" in text
    assert "to keep it\n- second, also" in text
    assert "fn main() {\n    run();\n}" in text
    assert "line one\nline two" in text and "\n\n---\n\n" in text
    assert "tab and spaces collapse" in text and "\n\n\n" not in text


def test_links_get_numbers_resolved_against_the_final_url():
    text = html_to_text(article("<p>Read <a href='../guide/'>the guide</a>, <a href='https://other.example/x#top'>"
                                "this</a>, <a href='/guide/'>the guide again</a>, <a href='#section'>a jump</a>, "
                                "<a href='mailto:a@b.example'>mail</a> and <a href='javascript:void(0)'>js</a>.</p>"),
                        "https://example.com/docs/page/index.html")
    assert "the guide [1], this [2], the guide again [3], a jump, mail and js." in text
    assert text.endswith("Links:\n[1] https://example.com/docs/guide/\n[2] https://other.example/x\n"
                         "[3] https://example.com/guide/")


def test_entities_images_and_hidden_parts():
    text = html_to_text(article("<p>caf&eacute; &amp; &lt;tags&gt; <img src='x.png' alt='a diagram'></p>"
                                "<script>secret()</script><style>p{}</style><noscript>enable js</noscript>"
                                "<nav><a href='/menu'>Menu</a></nav>", title="Tom &amp; Jerry"),
                        "https://example.com/")
    assert text.startswith("# Tom & Jerry")
    assert "café & <tags> [image: a diagram]" in text
    assert "secret" not in text and "enable js" not in text and "Menu" not in text


def test_pages_readability_gives_up_on_still_become_text():
    assert html_to_text("<!-- only a comment -->", "https://example.com/") == ""
    assert html_to_text("just some words", "https://example.com/") == "just some words"
    assert html_to_text("   ", "https://example.com/") == ""


def test_kinds_of_content():
    assert kind_of("text/html; charset=utf-8") == kind_of("application/xhtml+xml") == "html"
    for text_type in ("application/json", "application/ld+json", "text/plain", "text/csv", "application/xml",
                      "application/atom+xml", "image/svg+xml", "application/javascript"):
        assert kind_of(text_type) == "text", text_type
    for binary in ("image/png", "IMAGE/JPEG", "application/pdf", "application/zip", "audio/mpeg", "video/webm",
                   "application/octet-stream", "font/woff2", "application/vnd.openxmlformats-officedocument.x",
                   "application/x-zip-compressed", "application/x-gtar", "application/x-rpm", "application/x-dosexec"):
        assert kind_of(binary) == "binary", binary
    assert kind_of("application/x-unheard-of") == "unknown"
    assert sniff(b"<!DOCTYPE html><html><body>x", "unknown") == "html"
    assert sniff(b"plain words", "unknown") == "text"
    assert sniff(b"PK\x03\x04\x00\x00", "unknown") == "binary"


def test_charsets_from_the_header_the_meta_tag_or_a_bom():
    latin = "<html><head><meta charset='windows-1252'></head><body>naïve – “quoted”</body></html>"
    data = latin.encode("cp1252")
    assert charset_of("text/html", data, True) == "cp1252"
    assert "naïve – “quoted”" in text_of(data, "text/html", True)
    assert charset_of("text/html; charset=ISO-8859-1", data, True) == "iso8859-1"      # the header wins
    assert charset_of("text/plain; charset=bogus", b"x", False) == "utf-8"
    assert text_of("\ufeffhello".encode("utf-8"), "text/plain", False) == "hello"
    assert text_of("hi".encode("utf-16"), "text/plain", False) == "hi"
    assert text_of(b"bad \xff byte", "text/plain; charset=utf-8", False) == "bad \ufffd byte"


def test_any_markup_converts_or_fails_with_a_sentence():
    fuzz_web_text.any_markup_converts_or_fails_with_a_sentence()
