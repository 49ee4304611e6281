"""Risk and approval of web_fetch: the allowlist of HTTPS hosts, the summary, the policies,
and `scv tool web_fetch` as a real process."""

import json

import pytest

from scv.core.errors import RefusedError
from scv.tools.base import Risk
from tests.conftest import result_json, run_scv
from tests.web_fakes import LoopbackServer, Reply, make_certificates, tls_context
from tests.web_runners import web_config, web_runner

LISTED = ["docs.rs", "docs.python.org"]


@pytest.mark.parametrize("url, risk", [
    ("https://docs.rs/serde/latest/serde/", Risk.READ_ONLY),
    ("https://DOCS.RS/x", Risk.READ_ONLY),
    ("http://docs.rs/serde/", Risk.NETWORK),
    ("https://sub.docs.rs/", Risk.NETWORK),
    ("https://docs.rs.evil.example/", Risk.NETWORK),
    ("https://example.com/?leak=secret", Risk.NETWORK),
])
def test_risk_is_read_only_only_for_listed_https_hosts(supervisor, workspace, url, risk):
    runner = web_runner(supervisor, workspace, web_config(auto_approve_domains=LISTED))
    prepared = runner.prepare("web_fetch", {"url": url})
    assert prepared.risk is risk
    assert prepared.summary == f"fetch {url}"           # the full URL, since it can carry data
    args = prepared.spec.worker_args(prepared.call, runner.ctx)
    assert ("redirect_hosts" in args) is (risk is Risk.READ_ONLY)


@pytest.mark.parametrize("url, risk, summary", [
    ("https://docs.rs./x", Risk.READ_ONLY, "fetch https://docs.rs./x"),
    ("https://bücher.example/", Risk.NETWORK, "fetch https://bücher.example/ (host xn--bcher-kva.example)"),
    # A look-alike letter (Cyrillic о) shows in the ASCII form the approver sees.
    ("https://d\u043ecs.rs/", Risk.NETWORK, "fetch https://d\u043ecs.rs/ (host xn--dcs-sed.rs)"),
])
def test_an_internationalised_or_dotted_host_is_judged_and_shown_as_connected_to(supervisor, workspace, url, risk,
                                                                                   summary):
    runner = web_runner(supervisor, workspace, web_config(auto_approve_domains=LISTED))
    prepared = runner.prepare("web_fetch", {"url": url})
    assert (prepared.risk, prepared.summary) == (risk, summary)


def test_on_risk_asks_for_unlisted_urls_only(supervisor, workspace):
    asked = []

    def approver(tool, risk, summary):
        asked.append((tool, risk, summary))
        return False
    runner = web_runner(supervisor, workspace, web_config(auto_approve_domains=LISTED), approver=approver)
    runner.approve(runner.prepare("web_fetch", {"url": "https://docs.rs/tokio"}))
    assert asked == []
    with pytest.raises(RefusedError, match="approval for web_fetch was denied"):
        runner.approve(runner.prepare("web_fetch", {"url": "https://example.com/page", "offset": 10}))
    assert asked == [("web_fetch", Risk.NETWORK, "fetch https://example.com/page from character 10")]


def test_never_policy_allows_listed_hosts_and_denies_the_rest(supervisor, workspace):
    config = web_config(tools={"approval_policy": "never"}, auto_approve_domains=LISTED)
    runner = web_runner(supervisor, workspace, config)
    runner.approve(runner.prepare("web_fetch", {"url": "https://docs.python.org/3/"}))
    with pytest.raises(RefusedError, match="network risk"):
        runner.approve(runner.prepare("web_fetch", {"url": "https://example.com/"}))


def test_the_schema_is_generated_and_closed(supervisor, workspace):
    runner = web_runner(supervisor, workspace, web_config())
    schema = runner.registry.get("web_fetch").schema(runner.ctx)
    assert schema["required"] == ["url"] and set(schema["properties"]) == {"url", "offset"}
    assert schema["additionalProperties"] is False
    with pytest.raises(RefusedError, match="web_fetch has no argument 'method'"):
        runner.prepare("web_fetch", {"url": "https://example.com/", "method": "POST"})


# --- `scv tool web_fetch` as a real process ------------------------------------------------------

@pytest.fixture
def server(supervisor):
    srv = LoopbackServer({"/": Reply(body=b"<html><head><title>Local</title></head><body><p>Served from the "
                                          b"loopback server to a real scv process.</p></body></html>")})
    yield srv
    srv.close()


def test_scv_tool_fetches_when_private_addresses_are_allowed(scv_home, workspace, server):
    (scv_home / "config.toml").write_text("[web]\nallow_private_addresses = true\n")
    proc = run_scv("tool", "web_fetch", json.dumps({"url": server.url("/")}), "--auto-approve", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    value = result_json(proc)
    assert value["status"] == 200 and "Served from the loopback server" in value["content"]


def test_scv_tool_refuses_loopback_by_default(scv_home, workspace, server):
    proc = run_scv("tool", "web_fetch", json.dumps({"url": server.url("/")}), "--auto-approve", "-C", str(workspace))
    assert proc.returncode == 2, "an IP literal in a refused range is refused before anything runs"
    assert "127.0.0.1 is a loopback address" in result_json(proc)["error"]
    assert "127.0.0.1 is a loopback address" in proc.stderr
    assert server.seen == []


def test_scv_tool_without_a_terminal_does_not_fetch_unlisted_urls(scv_home, workspace, server):
    (scv_home / "config.toml").write_text("[web]\nallow_private_addresses = true\n")
    proc = run_scv("tool", "web_fetch", json.dumps({"url": server.url("/")}), "-C", str(workspace))
    assert proc.returncode == 2 and "needs approval" in result_json(proc)["error"]
    assert server.seen == []


def test_scv_tool_refuses_credentials_before_anything_runs(scv_home, workspace):
    proc = run_scv("tool", "web_fetch", '{"url": "https://user:pw@example.com/"}', "--auto-approve",
                   "-C", str(workspace))
    assert proc.returncode == 2 and "credentials" in result_json(proc)["error"]


# --- an auto-approved HTTPS fetch, end to end ------------------------------------------------------

@pytest.fixture(scope="module")
def localhost_tls(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls"), "localhost")


@pytest.fixture
def https_server(supervisor, localhost_tls):
    srv = LoopbackServer({"/doc": Reply(body=b"<html><body><p>Listed host, fetched without asking, over "
                                             b"TLS checked against the name localhost.</p></body></html>")},
                         tls=tls_context(localhost_tls[1], localhost_tls[2]))
    yield srv
    srv.close()


def https_runner(supervisor, workspace, https_server, localhost_tls, **tools):
    asked = []
    config = web_config(tools={"approval_policy": "never", **tools}, auto_approve_domains=["localhost"])
    runner = web_runner(supervisor, workspace, config, [https_server.port], ca_bundle=str(localhost_tls[0]),
                        approver=lambda *call: asked.append(call) or True)
    return runner, asked


def test_a_listed_https_host_is_fetched_without_approval(supervisor, workspace, https_server, localhost_tls):
    runner, asked = https_runner(supervisor, workspace, https_server, localhost_tls)
    result = runner.call("web_fetch", {"url": https_server.url("/doc", host="localhost", scheme="https")})
    assert result.ok, result.value
    assert "fetched without asking" in result.value["content"] and asked == []
    assert https_server.seen[0].headers["host"] == f"localhost:{https_server.port}"


def test_a_listed_fetch_may_not_be_redirected_off_the_list(supervisor, workspace, https_server, localhost_tls):
    plain = f"http://localhost:{https_server.port}/doc"
    https_server.routes["/away"] = Reply(302, headers={"Location": plain})
    https_server.routes["/stay"] = Reply(302, headers={"Location": "/doc"})
    runner, asked = https_runner(supervisor, workspace, https_server, localhost_tls)
    stay = runner.call("web_fetch", {"url": https_server.url("/stay", host="localhost", scheme="https")})
    assert stay.ok and stay.value["url"].endswith("/doc")
    away = runner.call("web_fetch", {"url": https_server.url("/away", host="localhost", scheme="https")})
    assert not away.ok and away.value["redirect_to"] == plain
    assert f"redirected to {plain}, which is not an auto-approved HTTPS host" in away.value["error"]
    assert asked == []
    assert [seen.path for seen in https_server.seen] == ["/stay", "/doc", "/away"]
