"""web_fetch approvals over `scv server --stdio` (real processes): a URL off the allowlist
asks the client, an HTTPS host on `web.auto_approve_domains` runs unasked. The user config
turns the address check off (`web.allow_private_addresses`), since the server process is the
production build with no test allowance. Hosted search (`web.search = "provider"`) reaches a
fake Responses endpoint in every model request, and its citations come back as `Sources:`."""

import pytest

from tests.conftest import scv_env
from tests.fake_openai import FakeOpenAI
from tests.fake_openai import Reply as ModelReply
from tests.stdio_client import StdioClient
from tests.fakes import write_script
from tests.web_fakes import LoopbackServer, Reply


@pytest.fixture
def page():
    server = LoopbackServer({"/doc": Reply(body=b"<html><body><article><h1>Title</h1><p>" + b"Fetched text. " * 40
                                           + b"</p></article></body></html>")})
    yield server
    server.close()


@pytest.fixture
def client_for(scv_home, tmp_path, workspace):
    started = []

    def make(url: str) -> StdioClient:
        (scv_home / "config.toml").write_text('[web]\nallow_private_addresses = true\n'
                                              'auto_approve_domains = ["localhost"]\n')
        script = write_script(tmp_path / "s.jsonl",
                              {"calls": [{"id": "f", "tool": "web_fetch", "args": {"url": url}}]},
                              {"text": "ok={{f.ok}}"})
        client = StdioClient("--script", str(script))
        started.append(client)
        client.start(cwd=str(workspace))
        return client
    yield make
    for client in started:
        client.kill()


@pytest.mark.parametrize("approved", [True, False])
def test_a_url_off_the_allowlist_asks_the_client(client_for, page, approved):
    url = page.url("/doc?q=1")
    client = client_for(url)
    client.request("turn.start", {"prompt": "fetch it"})
    asked = client.until("approval.requested")
    assert asked.params["tool"] == "web_fetch" and asked.params["risk"] == "network"
    assert url in asked.params["summary"]
    client.request("approval.resolve", {"id": asked.params["id"], "approved": approved})
    done = client.until("turn.completed")
    assert done.params["reply"] == ("ok=true" if approved else "ok=false")
    assert bool(page.seen) is approved


def test_an_allowlisted_https_host_runs_unasked(client_for, page):
    # Nothing speaks TLS on that port, so the fetch fails, but it ran without asking anyone.
    client = client_for(f"https://localhost:{page.port}/doc")
    client.request("turn.start", {"prompt": "fetch it"})
    done = client.until("turn.completed")
    assert not client.notifications("approval.requested")
    completed = client.notifications("tool.completed")
    assert completed and completed[0]["ok"] is False
    assert done.params["reply"] == "ok=false"


def test_hosted_search_is_offered_in_each_model_request_and_citations_become_sources(scv_home, workspace):
    fake = FakeOpenAI()
    client = None
    try:
        (scv_home / "config.toml").write_text(fake.config("responses", extra='\n[web]\nsearch = "provider"\n'))
        (workspace / "notes.txt").write_text("tokio\n")
        fake.enqueue(ModelReply(text="checking", calls=[("c1", "read", '{"path": "notes.txt"}')]),
                     ModelReply(text="Tokio 1.40 is out.", annotations=[
                         {"type": "url_citation", "url": "https://tokio.rs/blog/2024-10", "title": "Tokio blog",
                          "start_index": 0, "end_index": 5}]))
        client = StdioClient(env=scv_env(FAKE_OPENAI_KEY="sk-test"))
        session = client.start(cwd=str(workspace))
        assert "web_search" not in session["tools"]          # the provider searches; SCV has no such tool
        client.request("turn.start", {"prompt": "latest tokio?"})
        done = client.until("turn.completed")
        assert done.params["reply"] == "Tokio 1.40 is out.\n\nSources:\n- Tokio blog: https://tokio.rs/blog/2024-10"
        assert len(fake.requests) == 2
        for request in fake.requests:
            tools = request.body["tools"]
            assert {"type": "web_search"} in tools
            assert [t["name"] for t in tools if t.get("type") == "function" and t["name"].startswith("web")] == \
                ["web_fetch"]
        assert not client.notifications("approval.requested")
    finally:
        if client is not None:
            client.kill()
        fake.close()
