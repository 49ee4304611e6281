"""Paging a long text by character offsets (workers.web_fetch.page_end)."""

from fuzz import fuzz_web_text
from workers.web_fetch import page_end


def test_pages_cover_the_text_in_order_within_the_budget():
    fuzz_web_text.pages_cover_the_text_in_order_within_the_budget()


def test_a_page_prefers_to_end_at_a_line_end_near_its_limit():
    text = "a" * 90 + "\n" + "b" * 200
    assert page_end(text, 0, 100) == 91
    assert page_end("x" * 50 + "\n" + "y" * 200, 0, 100) == 100      # the line end is too early to use
