"""Limits on delegated agents through real workers and the fake agent CLIs, each scripted to loop
without end: stopped at exactly N turns, at a token limit within one response, at a USD limit from
the agent's reported cost and from the price table; the group stopped, the conversation kept, and
the call's use counted in the run's budget."""

import os

import pytest

from scv.config.load import load_config, prices_of
from scv.core.errors import RefusedError
from scv.core.limits import Budget, Limits
from scv.core.usage import Usage
from tests.agent_fakes import install, on_cli

CLAUDE_LOOP = r'''echo $$ > "$(dirname "$0")/pid"
echo '{"type":"system","subtype":"init","session_id":"loop-session-1"}'
i=0
while true; do
  i=$((i+1))
  echo "{\"type\":\"assistant\",\"message\":{\"id\":\"m$i\",\"model\":\"claude-x\",\"content\":[{\"type\":\"tool_use\",\"name\":\"Bash\",\"input\":{\"command\":\"true\"}}],\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":50,\"output_tokens\":10}}}"
  sleep 0.01
done
'''

PI_LOOP = r'''echo $$ > "$(dirname "$0")/pid"
echo '{"type":"session","id":"pi-session-1"}'
while true; do
  echo '{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"toolUse","usage":{"input":100,"output":10,"cacheRead":0,"cost":{"total":0.1}}}}'
  sleep 0.01
done
'''

CODEX_LOOP = r'''echo $$ > "$(dirname "$0")/pid"
echo '{"type":"thread.started","thread_id":"codex-thread-1"}'
while true; do
  echo '{"type":"item.completed","item":{"type":"command_execution","command":"true","exit_code":0}}'
  echo '{"type":"item.completed","item":{"type":"reasoning","text":"hm"}}'
  sleep 0.01
done
'''


@pytest.fixture
def agents(tmp_path, user_home, scv_home):
    def make(name: str, body: str, config: str = ""):
        (scv_home / "config.toml").write_text(on_cli(config))
        fake = install(user_home / ".local" / "bin", name, tmp_path / "log" / name)
        fake.write(body)
        return fake
    return make


def call(runner, raw: dict) -> tuple[bool, dict]:
    result = runner.run(runner.prepare("agent", raw))
    return result.ok, result.value


def assert_stopped(fake) -> None:
    pid = int((fake.bin_dir / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_claude_stops_at_exactly_n_turns_and_keeps_its_conversation(agents, make_runner, workspace):
    fake = agents("claude", CLAUDE_LOOP, "[agents.claude]\nmax_turns = 3\n")
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "loop"})
    assert not ok and value["status"] == "limit" and value["reply"] == ""
    assert value["limit"] == {"kind": "turns", "max": 3, "used": 3}
    assert value["usage"]["turns"] == 3 and value["usage"]["input_tokens"] == 300
    assert value["usage"]["cached_input_tokens"] == 150
    assert value["session"] == "claude-1"       # stopped, not lost: the CLI had reported its session
    assert_stopped(fake)


def test_claude_token_limit_within_one_response(agents, make_runner):
    fake = agents("claude", CLAUDE_LOOP, "[agents.claude]\nmax_tokens = 250\n")
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "loop"})
    # 110 counted tokens a response (cached input is shown, not counted): the third reaches 250.
    assert value["status"] == "limit" and value["limit"] == {"kind": "tokens", "max": 250, "used": 330}
    assert_stopped(fake)


def test_claude_usd_limit_from_the_price_table(agents, make_runner):
    fake = agents("claude", CLAUDE_LOOP, '[agents.claude]\nmodel = "claude-x"\nmax_cost_usd = 0.3\n\n'
                  '[prices."claude-x"]\ninput = 1000.0\ncached_input = 0.0\noutput = 1000.0\n')
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "loop"})
    assert value["status"] == "limit" and value["limit"]["kind"] == "cost_usd"
    assert value["limit"]["used"] == pytest.approx(0.33)
    assert value["usage"]["turns"] == 3
    assert_stopped(fake)


def test_pi_usd_limit_from_its_reported_cost(agents, make_runner, scv_home):
    fake = agents("pi", PI_LOOP, "[agents.pi]\nmax_cost_usd = 0.25\n")
    signed_in = scv_home / "agents" / "pi" / ".pi" / "agent"       # pi is offered once it has a key
    signed_in.mkdir(parents=True)
    (signed_in / "auth.json").write_text('{"scv": {"type": "api_key", "key": "k"}}')
    ok, value = call(make_runner(), {"agent": "pi", "prompt": "loop"})
    assert value["status"] == "limit" and value["limit"]["kind"] == "cost_usd"
    assert value["limit"]["used"] == pytest.approx(0.3)
    assert value["usage"]["cost_source"] == "reported" and value["usage"]["turns"] == 3
    assert_stopped(fake)


def test_codex_turns_count_items_but_not_reasoning(agents, make_runner):
    fake = agents("codex", CODEX_LOOP, "[agents.codex]\nmax_turns = 4\n")
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "loop"})
    assert value["status"] == "limit" and value["limit"] == {"kind": "turns", "max": 4, "used": 4}
    assert value["session"] == "codex-1"
    assert_stopped(fake)


def test_the_allowance_is_what_is_left_of_the_run_and_the_call_counts_against_it(agents, make_runner, workspace):
    fake = agents("claude", CLAUDE_LOOP, "[agents.claude]\nmax_turns = 8\n")
    config = load_config(workspace)
    budget = Budget(Limits(max_turns=10), prices_of(config))
    budget.spend(Usage(turns=7, input_tokens=0, output_tokens=0))
    ok, value = call(make_runner(config, budget=budget), {"agent": "claude", "prompt": "loop"})
    # The agent's own 8 is more than the run's 3 left: the call's allowance is 3.
    assert value["limit"] == {"kind": "turns", "max": 3, "used": 3}
    assert budget.used().turns == 10 and budget.hit().kind == "turns"
    assert_stopped(fake)


def test_a_limit_the_agent_cannot_show_is_refused_before_launch(agents, make_runner, workspace):
    fake = agents("codex", CODEX_LOOP)
    config = load_config(workspace)
    runner = make_runner(config, budget=Budget(Limits(max_cost_usd=1.0), prices_of(config)))
    with pytest.raises(RefusedError) as err:
        runner.prepare("agent", {"agent": "codex", "prompt": "loop", "model": "gpt-x"})
    assert "codex" in str(err.value) and "gpt-x" in str(err.value) and "[prices" in str(err.value)
    assert fake.calls() == []


def test_the_model_cannot_set_a_limit_through_the_agent_arguments(agents, make_runner):
    agents("claude", CLAUDE_LOOP)
    with pytest.raises(RefusedError):
        make_runner().prepare("agent", {"agent": "claude", "prompt": "x", "max_turns": 1000})
