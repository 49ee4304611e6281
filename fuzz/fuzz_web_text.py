"""Properties of web_fetch's text side: any markup converts to text or fails with one sentence,
and paging by character offsets covers a text exactly, each page within its byte budget.
Run briefly by tests/test_web_html.py and tests/test_web_paging.py, for longer by bin/fuzz."""

from hypothesis import given
from hypothesis import strategies as st

from workers.runtime import ToolFailure
from workers.web_fetch import page_end
from workers.web_html import html_to_text

_TAGS = ["<p>", "</p>", "<div>", "</div>", "<a href='/x'>", "<a href=\"http://a.example/y#z\">", "</a>", "<pre>",
         "</pre>", "<br>", "<hr>", "<li>", "<ul>", "</ul>", "<h2>", "</h2>", "<script>", "</script>", "<nav>",
         "<table><tr><td>", "</td></tr></table>", "<img alt='pic'>", "<!--", "-->", "&amp;", "&#0;", "&#x1F600;",
         "<title>", "</title>", "<![CDATA[", "]]>", "<body>", "<html>", "<?xml?>"]
markup = st.lists(st.one_of(st.sampled_from(_TAGS), st.text(max_size=12)), max_size=60).map("".join)


@given(markup)
def any_markup_converts_or_fails_with_a_sentence(page):
    try:
        text = html_to_text(page, "https://example.com/dir/")
    except ToolFailure as failure:
        assert str(failure) and "\n" not in str(failure)
        return
    if "<pre" not in page:
        assert "\n\n\n" not in text
    assert text == text.strip()


@given(st.text(alphabet=st.sampled_from(list("ab \n\"é✓😀\\\x01")), max_size=3000), st.integers(4, 400))
def pages_cover_the_text_in_order_within_the_budget(text, budget):
    offset, pages = 0, []
    while offset < len(text):
        end = page_end(text, offset, budget)
        assert offset < end <= len(text)
        page = text[offset:end]
        assert len(page.encode()) <= budget
        pages.append(page)
        offset = end
    assert "".join(pages) == text


HARNESSES = [any_markup_converts_or_fails_with_a_sentence, pages_cover_the_text_in_order_within_the_budget]
