"""`scv exec` against a fake Anthropic Messages endpoint (the one the Claude Code peer tests use),
as a real process: a plain reply, a tool-use round trip, a 429 with retry-after, and a 401."""

import json

import pytest

from tests.conftest import run_scv, scv_env
from tests.fakes import events
from tests.peers.fake_anthropic import FakeAnthropic

KEY = "sk-ant-test"


@pytest.fixture
def fake():
    server = FakeAnthropic(text="hello from claude")
    server.api_key = KEY
    yield server
    server.close()


@pytest.fixture
def configured(scv_home, fake):
    (scv_home / "config.toml").write_text(
        f'[provider]\nactive = "claude"\n\n[providers.claude]\nkind = "anthropic"\nmodel = "claude-fake"\n'
        f'base_url = "{fake.base_url}"\napi_key_env = "FAKE_ANTHROPIC_KEY"\nmax_tokens = 1024\ntimeout = 30\n')
    return fake


def exec_(workspace, *args, key=KEY):
    return run_scv("exec", *args, "-C", str(workspace), env=scv_env(FAKE_ANTHROPIC_KEY=key), timeout=60)


def test_plain_reply(configured, workspace):
    proc = exec_(workspace, "say hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello from claude\n"
    (request,) = configured.requests
    assert request["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    body = request["body"]
    assert body["stream"] is True and body["model"] == "claude-fake" and body["max_tokens"] == 1024
    assert body["system"] and body["messages"][0]["role"] == "user"
    listed = json.loads(run_scv("tools", "--json", "-C", str(workspace)).stdout)["tools"]
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in listed]
    assert all("input_schema" in t for t in body["tools"])


def test_tool_use_round_trip(configured, workspace):
    (workspace / "notes.txt").write_text("the answer is 42\n")
    configured.tool_use = ("what do the notes say?", "read", {"path": "notes.txt"})
    proc = exec_(workspace, "what do the notes say?", "--json")
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    completed = next(e for e in seen if e["type"] == "tool.completed")
    assert completed["ok"] and completed["result"]["content"] == "the answer is 42\n"
    assert seen[-1]["type"] == "turn.completed" and seen[-1]["reply"] == "tool result: ok"
    assert seen[-1]["usage"]["input_tokens"] == 22
    first, second = configured.requests
    asked, answered = second["body"]["messages"][-2:]
    (call,) = [b for b in asked["content"] if b["type"] == "tool_use"]
    assert asked["role"] == "assistant" and call["name"] == "read" and call["input"] == {"path": "notes.txt"}
    (result,) = answered["content"]
    assert answered["role"] == "user" and result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    assert json.loads(result["content"])["content"] == "the answer is 42\n" and not result.get("is_error")


def test_429_waits_what_retry_after_asks(configured, workspace):
    configured.statuses = [(429, "1")]
    proc = exec_(workspace, "say hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello from claude\n"
    first, second = configured.requests
    assert second["at"] - first["at"] >= 1.0


def test_401_ends_the_run_naming_the_provider(configured, workspace):
    proc = exec_(workspace, "say hello", key="sk-ant-wrong")
    assert proc.returncode == 1
    assert "provider claude refused the credentials (HTTP 401: invalid x-api-key)" in proc.stderr
    assert "sk-ant-wrong" not in proc.stderr + proc.stdout
    assert len(configured.requests) == 1      # not retried


def test_cache_reads_are_counted_apart_in_the_ledger(configured, workspace):
    # message_start: input_tokens 11 (uncached), cache_read_input_tokens 40; message_delta: 5 output.
    configured.cache_read = 40
    proc = exec_(workspace, "say hello", "--json")
    assert proc.returncode == 0, proc.stderr
    usage = events(proc)[-1]["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (11, 40, 5)
    assert usage["total_tokens"] == 16
