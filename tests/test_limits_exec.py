"""Limits on SCV's own model loop through a real `scv exec` against the fake model server, scripted
to ask for a tool without end: stopped at exactly N responses, at a token limit, at a USD limit from
the price table; exit status 3, `limit` and `usage` on the final event, the total on stderr."""

import json

import pytest

from tests.conftest import run_scv, scv_env
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import events

PRICE = '[prices."fake-model"]\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n'


@pytest.fixture
def looping():
    """The model asks to read a file in every response, forever (60 queued is more than any limit here)."""
    server = FakeOpenAI()
    server.enqueue(*[Reply(text="", calls=[(f"c{i}", "read", '{"path": "notes.txt"}')], usage=(1000, 100))
                     for i in range(60)])
    yield server
    server.close()


def exec_(workspace, *args):
    return run_scv("exec", "read forever", "--json", "-C", str(workspace), *args,
                   env=scv_env(FAKE_OPENAI_KEY="sk-test"), timeout=60)


def test_max_turns_stops_at_exactly_n_responses(scv_home, looping, workspace):
    (scv_home / "config.toml").write_text(looping.config())
    (workspace / "notes.txt").write_text("x\n")
    proc = exec_(workspace, "--max-turns", "3")
    assert proc.returncode == 3, proc.stderr
    assert len(looping.requests) == 3
    seen = events(proc)
    done = seen[-1]
    assert done["type"] == "turn.completed" and done["reply"] == ""
    assert done["limit"] == {"kind": "turns", "max": 3, "used": 3}
    assert done["usage"]["turns"] == 3 and done["usage"]["input_tokens"] == 3000
    # The third response's call did not run: only two reads happened.
    assert sum(1 for e in seen if e["type"] == "tool.completed") == 2
    lines = proc.stderr.strip().splitlines()
    assert any("limit turns" in line for line in lines)
    assert lines[-1].startswith("scv: usage: 3 turns, 3000 input tokens")


def test_token_limit_from_config_stops_within_one_response(scv_home, looping, workspace):
    (scv_home / "config.toml").write_text(looping.config() + "\n[limits]\nmax_tokens = 2500\n")
    (workspace / "notes.txt").write_text("x\n")
    proc = exec_(workspace)
    assert proc.returncode == 3, proc.stderr
    done = events(proc)[-1]
    # 1100 tokens a response: 2200 is under, 3300 reaches it: three responses, no fourth request.
    assert done["limit"] == {"kind": "tokens", "max": 2500, "used": 3300}
    assert len(looping.requests) == 3


def test_usd_limit_from_the_price_table(scv_home, looping, workspace):
    (scv_home / "config.toml").write_text(looping.config() + "\n" + PRICE)
    (workspace / "notes.txt").write_text("x\n")
    # A response: 1000 x 2.0 + 100 x 10.0 per million = $0.003; $0.007 is reached by the third.
    proc = exec_(workspace, "--max-cost-usd", "0.007")
    assert proc.returncode == 3, proc.stderr
    done = events(proc)[-1]
    assert done["limit"]["kind"] == "cost_usd" and done["limit"]["max"] == 0.007
    assert done["limit"]["used"] == pytest.approx(0.009)
    assert done["usage"]["cost_source"] == "prices" and done["usage"]["cost_usd"] == pytest.approx(0.009)
    assert len(looping.requests) == 3


def test_usd_limit_without_a_price_is_refused_before_anything_runs(scv_home, looping, workspace):
    (scv_home / "config.toml").write_text(looping.config())
    proc = exec_(workspace, "--max-cost-usd", "1")
    assert proc.returncode == 2
    assert "fake-model" in proc.stderr and "[prices" in proc.stderr
    assert looping.requests == []


@pytest.mark.parametrize("config, key", [
    ("[limits]\nmax_turns = 0\n", "limits.max_turns"),
    ("[limits]\nmax_cost_usd = -1.5\n", "limits.max_cost_usd"),
    ('[limits]\nmax_tokens = "many"\n', "limits.max_tokens"),
    ("[limits]\nmax_cost_usd = nan\n", "limits.max_cost_usd"),
    ('[prices."m"]\ninput = 1.0\noutput = 2.0\n', "cached_input"),
    ('[prices."m"]\ninput = 1.0\ncached_input = -0.1\noutput = 2.0\n', "prices.m.cached_input"),
    ('[agents.codex]\nmax_cost_usd = 1.0\n', "agents.codex"),
    ('[agents.grok]\ntransport = "resume"\nmax_tokens = 10\n', "agents.grok"),
])
def test_bad_limits_are_configuration_errors(scv_home, looping, workspace, config, key):
    (scv_home / "config.toml").write_text(looping.config() + "\n" + config)
    proc = exec_(workspace)
    assert proc.returncode == 2, proc.stderr
    assert key in proc.stderr and str(scv_home / "config.toml") in proc.stderr
    assert looping.requests == []


def test_a_project_may_lower_a_limit_but_not_raise_it(scv_home, looping, workspace):
    (scv_home / "config.toml").write_text(looping.config() + "\n[limits]\nmax_turns = 5\n")
    (workspace / "notes.txt").write_text("x\n")
    (workspace / ".scv").mkdir()
    project = workspace / ".scv" / "config.toml"
    project.write_text("[limits]\nmax_turns = 9\n")
    proc = exec_(workspace)
    assert proc.returncode == 2 and "limits.max_turns" in proc.stderr and str(project) in proc.stderr
    assert looping.requests == []
    project.write_text("[limits]\nmax_turns = 2\nmax_tokens = 100000\n")
    proc = exec_(workspace)
    assert proc.returncode == 3, proc.stderr
    assert events(proc)[-1]["limit"] == {"kind": "turns", "max": 2, "used": 2}


def test_a_session_start_with_a_usd_limit_and_no_price_is_refused(clients, workspace, tmp_path):
    from tests.fakes import write_script
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", {"text": "hi"})))
    client.request("initialize", {"protocol_version": 3})
    failed = client.response(client.send("session.start", {"cwd": str(workspace), "limits": {"max_cost_usd": 0.5}}))
    assert failed.error.code == -32000
    assert "[prices" in failed.error.message and "USD limit" in failed.error.message
    bad = client.response(client.send("session.start", {"cwd": str(workspace), "limits": {"max_turns": 0}}))
    assert bad.error is not None
    started = client.response(client.send("session.start", {"cwd": str(workspace), "limits": {"max_turns": 1}}))
    assert started.error is None


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_cached_input_is_counted_apart_priced_apart_and_left_out_of_a_token_limit(scv_home, workspace, wire_api):
    """The endpoint reports 1000 input tokens a response, 800 of them from its prompt cache
    (Responses: input_tokens_details.cached_tokens; Chat: prompt_tokens_details.cached_tokens)."""
    fake = FakeOpenAI()
    fake.enqueue(*[Reply(calls=[(f"c{i}", "read", '{"path": "notes.txt"}')], usage=(1000, 100), cached=800)
                   for i in range(10)])
    try:
        (scv_home / "config.toml").write_text(fake.config(wire_api) + "\n" + PRICE + "\n[limits]\nmax_tokens = 850\n")
        (workspace / "notes.txt").write_text("x\n")
        proc = exec_(workspace)
        requests = len(fake.requests)
    finally:
        fake.close()
    assert proc.returncode == 3, proc.stderr
    done = events(proc)[-1]
    # 200 uncached input + 100 output counted a response: 600 is under 850, 900 reaches it.
    assert done["limit"] == {"kind": "tokens", "max": 850, "used": 900} and requests == 3
    usage = done["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (600, 2400, 300)
    # A response: (200 x 2.0 + 800 x 0.5 + 100 x 10.0) per million = $0.0018.
    assert usage["cost_usd"] == pytest.approx(3 * 0.0018) and usage["cost_source"] == "prices"
    assert "600 input tokens (2400 cached)" in proc.stderr.strip().splitlines()[-1]
