"""Limits on live transports through a real `scv exec`: the scripted ACP peer looping rounds of
tool calls without end is stopped with session/cancel at exactly N turns and its conversation kept;
a run's --max-turns counts the delegated agent's turns (what is left of the run is its allowance);
a nested SCV gets what is left of the parent's budget in session.start, and its spend counts
against the parent's."""

import json

from tests.conftest import run_scv, scv_env
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import events
from tests.live_fakes import install_peer


def agent_reply(call_id: str, **args) -> Reply:
    return Reply(calls=[(call_id, "agent", json.dumps({"agent": "claude", **args}))], usage=(10, 5))


def run_exec(scv_home, workspace, fake, config: str, *args):
    (scv_home / "config.toml").write_text(fake.config("chat") + "\n" + config)
    return run_scv("exec", "--auto-approve", "--json", "go", "-C", str(workspace), *args,
                   env=scv_env(FAKE_OPENAI_KEY="sk-test"), timeout=120)


def agent_result(seen: list[dict]) -> dict:
    return next(e for e in seen if e["type"] == "tool.completed" and e["tool"] == "agent")["result"]


def test_an_acp_agent_stops_at_exactly_n_turns_with_session_cancel(tmp_path, user_home, workspace, scv_home):
    server = install_peer(user_home, tmp_path / "peer-log", "claude-agent-acp")
    fake = FakeOpenAI()
    try:
        fake.enqueue(agent_reply("c1", prompt="loop"), Reply(text="stopped as asked"))
        proc = run_exec(scv_home, workspace, fake, "[agents.claude]\nmax_turns = 3\n")
    finally:
        fake.close()
    assert proc.returncode == 0, proc.stderr
    result = agent_result(events(proc))
    assert result["status"] == "limit" and result["reply"] == ""
    assert result["limit"] == {"kind": "turns", "max": 3, "used": 3}
    assert result["session"] == "claude-1"       # session/cancel settled: the conversation goes on
    assert server.events("session/cancel")
    assert events(proc)[-1]["reply"] == "stopped as asked"


def test_a_run_limit_counts_the_delegated_turns(tmp_path, user_home, workspace, scv_home):
    install_peer(user_home, tmp_path / "peer-log", "claude-agent-acp")
    fake = FakeOpenAI()
    try:
        fake.enqueue(agent_reply("c1", prompt="loop"), Reply(text="never asked"))
        proc = run_exec(scv_home, workspace, fake, "", "--max-turns", "6")
        requests = len(fake.requests)
    finally:
        fake.close()
    # One model response, then the agent's allowance is the 5 left; at 6 the run stops: no second request.
    assert proc.returncode == 3, proc.stderr
    seen = events(proc)
    assert agent_result(seen)["limit"] == {"kind": "turns", "max": 5, "used": 5}
    assert seen[-1]["limit"] == {"kind": "turns", "max": 6, "used": 6}
    assert seen[-1]["usage"]["turns"] == 6
    assert requests == 1


def test_a_nested_scv_two_levels_deep_spends_against_the_parent(tmp_path, monkeypatch, workspace, scv_home):
    """Parent -> nested SCV -> nested SCV, one fake model for all three (they ask in turn): the
    deepest loops on `read` without end. Under --max-turns 5 the parent's one response leaves 4 to
    the child, whose one response leaves 3 to the grandchild; the grandchild stops at 3, the child
    at 4 (its own and its delegation's), the parent at 5, and no sixth request is made."""
    from tests.fakes import setup_fake_home
    setup_fake_home(tmp_path, monkeypatch)      # no `scv` installed: each level nests the running SCV
    (workspace / "notes.txt").write_text("x\n")
    fake = FakeOpenAI()
    private = scv_home / "agents" / "scv"
    deeper = private / "agents" / "scv"
    deeper.mkdir(parents=True)
    keyed = fake.config("chat").replace('api_key_env = "FAKE_OPENAI_KEY"', 'api_key = "sk-test"')
    for home in (private, deeper):
        (home / "config.toml").write_text(keyed)
    read = Reply(calls=[("r", "read", json.dumps({"path": "notes.txt"}))], usage=(100, 10))
    try:
        (scv_home / "config.toml").write_text(fake.config("chat"))
        fake.enqueue(Reply(calls=[("p1", "agent", json.dumps({"agent": "scv", "prompt": "go deeper"}))], usage=(100, 10)),
                     Reply(calls=[("c1", "agent", json.dumps({"agent": "scv", "prompt": "read forever"}))],
                           usage=(100, 10)),
                     *[read] * 20)
        proc = run_scv("exec", "--auto-approve", "--json", "go", "-C", str(workspace), "--max-turns", "5",
                       env=scv_env(FAKE_OPENAI_KEY="sk-test"), timeout=180)
        requests = len(fake.requests)
    finally:
        fake.close()
    assert proc.returncode == 3, proc.stderr
    seen = events(proc)
    child = next(e for e in seen if e["type"] == "tool.completed" and e["tool"] == "agent")["result"]
    assert child["status"] == "limit" and child["limit"]["kind"] == "turns"
    assert child["limit"]["used"] == 4 and child["usage"]["turns"] == 4
    assert child["session"] == "scv-1"
    final = seen[-1]
    assert final["limit"] == {"kind": "turns", "max": 5, "used": 5}
    # Every model request of the three levels is in the parent's ledger (1100 tokens... 110 each).
    assert final["usage"]["turns"] == 5 == requests
    assert final["usage"]["input_tokens"] == 500 and final["usage"]["output_tokens"] == 50
