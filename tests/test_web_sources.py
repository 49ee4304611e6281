"""The `Sources:` list for hosted search citations (scv.web.sources.append_sources)."""

from hypothesis import given
from hypothesis import strategies as st

from scv.web.sources import append_sources, hosted_tools


def cite(url, title=None, **extra):
    note = {"type": "url_citation", "url": url, "start_index": 0, "end_index": 1, **extra}
    if title is not None:
        note["title"] = title
    return note


def test_unlinked_citations_are_listed_once_in_citation_order():
    text = "Tokio 1.40 is out [tokio.rs](https://tokio.rs/blog/2024-10-1-40?utm_source=openai)."
    notes = [cite("https://crates.io/crates/tokio", "tokio - crates.io"),
             cite("https://tokio.rs/blog/2024-10-1-40?utm_source=openai", "Tokio blog"),
             cite("https://github.com/tokio-rs/tokio/releases", "Releases\n  tokio"),
             cite("https://crates.io/crates/tokio", "again")]
    assert append_sources(text, notes) == (
        text + "\n\nSources:\n- tokio - crates.io: https://crates.io/crates/tokio\n"
               "- Releases tokio: https://github.com/tokio-rs/tokio/releases")


def test_text_is_unchanged_when_every_citation_is_linked():
    text = "See https://example.com/a and <https://example.com/b/>, or https://example.com/c."
    notes = [cite("https://example.com/a"), cite("https://example.com/b"), cite("https://example.com/c/")]
    assert append_sources(text, notes) == text
    assert append_sources(text, []) == text


def test_a_longer_url_does_not_count_as_linking_a_prefix_of_it():
    text = "Read https://example.com/page2 for details."
    assert append_sources(text, [cite("https://example.com/page", "Page one")]).endswith(
        "Sources:\n- Page one: https://example.com/page")


def test_other_annotations_and_odd_urls_are_ignored():
    notes = [{"type": "file_citation", "file_id": "f1"}, cite("javascript:alert(1)"), cite("ftp://example.com/x"),
             cite("https://example.com/\nInjected: line"), "not a dict", {"type": "url_citation"},
             cite("https://example.com/ok", title="https://example.com/ok")]
    assert append_sources("Answer.", notes) == "Answer.\n\nSources:\n- https://example.com/ok"


def test_long_titles_are_shortened():
    out = append_sources("x", [cite("https://example.com/", "t" * 500)])
    title = out.split("- ", 1)[1].split(": https", 1)[0]
    assert len(title) == 200 and title.endswith("…")


def test_hosted_tools_only_for_provider_search():
    assert hosted_tools("provider") == [{"type": "web_search"}]
    assert hosted_tools("searxng") == hosted_tools("brave") == hosted_tools("none") == []


@given(st.text(max_size=200), st.lists(st.from_regex(r"\Ahttps://[a-z]{1,8}\.example/[a-z0-9/]{0,12}\Z"), max_size=6))
def test_every_cited_url_ends_up_in_the_result(text, urls):
    out = append_sources(text, [cite(url) for url in urls])
    assert out.startswith(text.rstrip())
    for url in urls:
        assert url in out
