"""web_search through the real supervisor against fake SearXNG and Brave servers, including
their error shapes."""

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from scv.tools.base import Risk
from tests.web_fakes import LoopbackServer, Reply, free_port
from tests.web_runners import web_config, web_runner

SEARX_RESULTS = {"query": "tokio", "number_of_results": 3, "results": [
    {"url": "https://tokio.rs/", "title": "Tokio - An asynchronous Rust runtime", "content": "Tokio is a runtime &amp; more",
     "engine": "duckduckgo", "score": 3.0},
    {"url": "https://crates.io/crates/tokio", "title": "tokio - crates.io", "content": "An event-driven, non-blocking "
     "I/O platform", "engines": ["bing"]},
    {"title": "no url, skipped"},
    {"url": "https://docs.rs/tokio", "title": "tokio - Rust", "content": None},
], "answers": [], "suggestions": [], "unresponsive_engines": [["google", "timeout"]]}

BRAVE_RESULTS = {"type": "search", "query": {"original": "tokio"}, "web": {"type": "search", "results": [
    {"title": "<strong>Tokio</strong> - An asynchronous Rust runtime", "url": "https://tokio.rs/",
     "description": "<strong>Tokio</strong> is an asynchronous runtime for the Rust programming language.",
     "page_age": "2024-10-01T00:00:00", "profile": {"name": "Tokio"}},
    {"title": "tokio - crates.io", "url": "https://crates.io/crates/tokio", "description": "An event-driven I/O platform"},
]}}


def brave_error(status, code, detail):
    return Reply(status, json.dumps({"type": "ErrorResponse", "error": {
        "id": "3c2b0b6c", "status": status, "code": code, "detail": detail, "meta": {"component": "authentication"}},
        "time": 1730000000}).encode(), content_type="application/json")


@pytest.fixture
def server(supervisor):
    srv = LoopbackServer()
    yield srv
    srv.close()


def searxng_runner(supervisor, workspace, server, **web):
    config = web_config(search="searxng", searxng_url=server.url("/searx/"), **web)
    return web_runner(supervisor, workspace, config)


def test_searxng_results(supervisor, workspace, server):
    server.routes["/searx/search"] = Reply(body=json.dumps(SEARX_RESULTS).encode(), content_type="application/json")
    runner = searxng_runner(supervisor, workspace, server)
    prepared = runner.prepare("web_search", {"query": "tokio latest version", "count": 5})
    assert prepared.risk is Risk.READ_ONLY and "tokio latest version" in prepared.summary
    result = runner.run(prepared)
    assert result.ok, result.value
    assert result.value["backend"] == "searxng"
    assert result.value["results"] == [
        {"title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/", "snippet": "Tokio is a runtime & more"},
        {"title": "tokio - crates.io", "url": "https://crates.io/crates/tokio",
         "snippet": "An event-driven, non-blocking I/O platform"},
        {"title": "tokio - Rust", "url": "https://docs.rs/tokio", "snippet": ""}]
    query = parse_qs(urlsplit(server.seen[0].path).query)
    assert query == {"q": ["tokio latest version"], "format": ["json"]}
    assert server.seen[0].headers["user-agent"].startswith("scv/")


def test_count_is_capped_by_max_search_results(supervisor, workspace, server):
    server.routes["/searx/search"] = Reply(body=json.dumps(SEARX_RESULTS).encode(), content_type="application/json")
    runner = searxng_runner(supervisor, workspace, server, max_search_results=2)
    assert runner.registry.get("web_search").schema(runner.ctx)["properties"]["count"]["anyOf"][0]["maximum"] == 2
    result = runner.call("web_search", {"query": "tokio", "count": 7})
    assert result.ok and len(result.value["results"]) == 2
    default = runner.call("web_search", {"query": "tokio"})
    assert len(default.value["results"]) == 2


def test_results_that_do_not_fit_the_output_limit_are_left_out(supervisor, workspace, server):
    results = [{"url": f"https://example.com/{n}", "title": f"Result {n}", "content": f"{n} " + "word " * 150}
               for n in range(8)]
    server.routes["/searx/search"] = Reply(body=json.dumps({"results": results}).encode(),
                                           content_type="application/json")
    config = web_config(tools={"output_limit_bytes": 2048}, search="searxng", searxng_url=server.url("/searx/"))
    result = web_runner(supervisor, workspace, config).call("web_search", {"query": "words"})
    assert result.ok, result.value
    value = result.value
    assert len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()) <= 2048
    kept = len(value["results"])
    assert 1 <= kept < 8 and value["results"][0]["url"] == "https://example.com/0"
    assert value["more"] is True and f"{8 - kept} more results did not fit" in value["note"]


@pytest.mark.parametrize("reply, words, hint", [
    (Reply(403, b"<html><body>Forbidden</body></html>"), "refused the JSON format", "search.formats"),
    (Reply(429, b"Too Many Requests", content_type="text/plain"), "rate limiter", "server.limiter"),
    (Reply(200, b"<!DOCTYPE html><html><body>SearXNG</body></html>"), "did not answer with search results",
     "search.formats"),
    (Reply(301, headers={"Location": "https://searx.example/search"}), "redirected the search to "
     "https://searx.example/search", "web.searxng_url"),
    (Reply(500, b"Internal Server Error", content_type="text/plain"), "HTTP 500", "log"),
])
def test_searxng_setup_errors_get_a_hint(supervisor, workspace, server, reply, words, hint):
    server.routes["/searx/search"] = reply
    result = searxng_runner(supervisor, workspace, server).call("web_search", {"query": "tokio"})
    assert not result.ok
    assert words in result.value["error"] and hint in result.value["hint"]


def test_searxng_whose_engines_all_failed(supervisor, workspace, server):
    body = {"query": "tokio", "results": [], "unresponsive_engines": [["google", "timeout"], ["bing", "CAPTCHA"]]}
    server.routes["/searx/search"] = Reply(body=json.dumps(body).encode(), content_type="application/json")
    result = searxng_runner(supervisor, workspace, server).call("web_search", {"query": "tokio"})
    assert not result.ok
    assert result.value["error"] == ("SearXNG found nothing because its engines did not answer "
                                     "(google timeout, bing CAPTCHA)")


def test_searxng_that_is_not_running(supervisor, workspace):
    config = web_config(search="searxng", searxng_url=f"http://127.0.0.1:{free_port()}")
    result = web_runner(supervisor, workspace, config).call("web_search", {"query": "tokio"})
    assert not result.ok and "cannot reach SearXNG" in result.value["error"]
    assert "running" in result.value["hint"]


def brave_runner(supervisor, workspace, server, **web):
    return web_runner(supervisor, workspace, web_config(search="brave", **web),
                      brave_endpoint=server.url("/res/v1/web/search"))


def test_brave_results_with_the_key_from_config(supervisor, workspace, server):
    server.routes["/res/v1/web/search"] = Reply(body=json.dumps(BRAVE_RESULTS).encode(), content_type="application/json")
    result = brave_runner(supervisor, workspace, server, brave_api_key="key-from-config").call(
        "web_search", {"query": "tokio", "count": 3})
    assert result.ok, result.value
    assert result.value["results"][0] == {
        "title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/",
        "snippet": "Tokio is an asynchronous runtime for the Rust programming language."}
    assert len(result.value["results"]) == 2
    seen = server.seen[0]
    assert seen.headers["x-subscription-token"] == "key-from-config"
    assert parse_qs(urlsplit(seen.path).query) == {"q": ["tokio"], "count": ["3"]}


def test_brave_counts_stop_at_the_20_its_api_gives(supervisor, workspace, server):
    server.routes["/res/v1/web/search"] = Reply(body=json.dumps(BRAVE_RESULTS).encode(), content_type="application/json")
    runner = brave_runner(supervisor, workspace, server, brave_api_key="k", max_search_results=30)
    assert runner.registry.get("web_search").schema(runner.ctx)["properties"]["count"]["anyOf"][0]["maximum"] == 20
    assert runner.call("web_search", {"query": "tokio", "count": 25}).ok
    assert parse_qs(urlsplit(server.seen[0].path).query)["count"] == ["20"]


def test_brave_key_from_its_variable(supervisor, workspace, server, monkeypatch):
    monkeypatch.setenv("MY_BRAVE_KEY", "key-from-env")
    server.routes["/res/v1/web/search"] = Reply(body=json.dumps({"type": "search"}).encode(),
                                                content_type="application/json")
    result = brave_runner(supervisor, workspace, server, brave_api_key_env="MY_BRAVE_KEY").call(
        "web_search", {"query": "nothing matches this"})
    assert result.ok and result.value["results"] == [] and "no results" in result.value["note"]
    assert server.seen[0].headers["x-subscription-token"] == "key-from-env"


def test_brave_without_a_key(supervisor, workspace, server, monkeypatch):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    result = brave_runner(supervisor, workspace, server).call("web_search", {"query": "tokio"})
    assert not result.ok and "no Brave Search API key" in result.value["error"]
    assert "web.brave_api_key" in result.value["hint"] and "BRAVE_API_KEY" in result.value["hint"]
    assert server.seen == []


@pytest.mark.parametrize("reply, words, hint", [
    (brave_error(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid."),
     "rejected the key (HTTP 422) (SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid.)",
     "web.brave_api_key"),
    (brave_error(401, "UNAUTHORIZED", "Missing token"), "rejected the key", "BRAVE_API_KEY"),
    (brave_error(429, "RATE_LIMITED", "Request rate limit exceeded for plan."), "rate limit or quota", "plan"),
    (Reply(502, b"<html>Bad Gateway</html>"), "answered HTTP 502", "status"),
])
def test_brave_errors_get_a_hint(supervisor, workspace, server, reply, words, hint):
    server.routes["/res/v1/web/search"] = reply
    result = brave_runner(supervisor, workspace, server, brave_api_key="k").call("web_search", {"query": "tokio"})
    assert not result.ok
    assert words in result.value["error"] and hint in result.value["hint"]
