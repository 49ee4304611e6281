"""Paging a long text by character offsets (workers.web_fetch.page_end)."""

from hypothesis import given
from hypothesis import strategies as st

from workers.web_fetch import page_end


@given(st.text(alphabet=st.sampled_from(list("ab \n\"é✓😀")), max_size=3000), st.integers(4, 400))
def test_pages_cover_the_text_in_order_within_the_budget(text, budget):
    offset, pages = 0, []
    while offset < len(text):
        end = page_end(text, offset, budget)
        assert offset < end <= len(text)
        page = text[offset:end]
        assert len(page.encode()) <= budget
        pages.append(page)
        offset = end
    assert "".join(pages) == text


def test_a_page_prefers_to_end_at_a_line_end_near_its_limit():
    text = "a" * 90 + "\n" + "b" * 200
    assert page_end(text, 0, 100) == 91
    assert page_end("x" * 50 + "\n" + "y" * 200, 0, 100) == 100      # the line end is too early to use
