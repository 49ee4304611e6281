"""The `agent` tool's `schema` argument (issue 21) through real workers and the fake Claude CLI:
the instruction reaches the agent, a valid reply gains `structured`, an invalid one gets one
repair turn over `session` (started internally), twice invalid ends `schema_invalid`, and an
unusable schema is refused before approval."""

import json
import shlex

import pytest

from scv.core.errors import RefusedError
from tests.agent_fakes import capture, install, on_cli
from tests.conftest import run_scv

SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]}
PROSE = "Hello from the fake backend."


@pytest.fixture
def claude(tmp_path, user_home, scv_home):
    (scv_home / "config.toml").write_text(on_cli())
    return install(user_home / ".local" / "bin", "claude", tmp_path / "log" / "claude")


def answers(fake, *replies: str) -> None:
    """The fake Claude's n-th run replays a real capture with its reply swapped for replies[n]."""
    q = shlex.quote
    branches = []
    for n, reply in enumerate(replies):
        in_json = json.dumps(reply)[1:-1]       # as the capture's JSON string holds it
        escaped = in_json.replace("\\", "\\\\").replace("/", "\\/").replace("&", "\\&")
        turn = capture("claude", "resume_turn1" if n == 0 else "resume_turn2").with_suffix(".jsonl")
        script = "s/" + PROSE.replace(".", "\\.") + "/" + escaped + "/g"
        branches.append(f'if [ "$n" = {n} ]; then sed {q(script)} {q(str(turn))}; fi')
    fake.write("\n".join(branches) + "\nexit 0\n")


def call(runner, raw):
    result = runner.run(runner.prepare("agent", raw))
    return result.ok, result.value


def test_a_valid_reply_gains_structured_and_the_agent_got_the_instruction(claude, make_runner):
    answers(claude, 'Done.\n```json\n{"verdict": "pass"}\n```')
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "check", "schema": SCHEMA})
    assert ok and value["status"] == "completed" and value["structured"] == {"verdict": "pass"}
    prompt = claude.calls()[0][-1]
    assert prompt.startswith("check\n\nStructured result") and '"required":["verdict"]' in prompt


def test_prose_is_repaired_over_the_same_session(claude, make_runner):
    answers(claude, "It passed.", '{"verdict": "fail"}')
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "check", "schema": SCHEMA})
    assert ok, value
    assert value["structured"] == {"verdict": "fail"} and value["session"] == "claude-1" and value["turn"] == 2
    first, repair = claude.calls()
    assert "--resume" in repair and "did not give a JSON document" in repair[-1]


def test_twice_invalid_ends_schema_invalid_with_errors(claude, make_runner):
    answers(claude, '{"verdict": "maybe"}', '{"verdict": "maybe"}')
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "check", "schema": SCHEMA})
    assert not ok and value["status"] == "schema_invalid"
    assert value["errors"] == [{"path": "/verdict", "message": "'maybe' is not one of ['pass', 'fail']"}]
    assert "structured" not in value and len(claude.calls()) == 2


@pytest.mark.parametrize("schema, said", [
    ({"type": 3}, "agent schema is not a valid Draft 2020-12 schema: at '/type'"),
    ({"$ref": "http://example.invalid/x"}, "$ref outside itself"),
    ({"enum": ["x" * 1000] * 70}, "over the 64 KiB bound"),
])
def test_an_unusable_schema_is_refused_before_approval(claude, make_runner, schema, said):
    asked = []
    runner = make_runner(approver=lambda *a: asked.append(a) or True)
    with pytest.raises(RefusedError, match=said.replace("$", r"\$").replace("(", r"\(")):
        runner.prepare("agent", {"agent": "claude", "prompt": "check", "schema": schema})
    assert asked == [] and claude.calls() == []


def test_scv_tool_agent_exits_1_with_schema_invalid(claude, workspace):
    answers(claude, "no", "still no")
    args = json.dumps({"agent": "claude", "prompt": "check", "schema": SCHEMA})
    proc = run_scv("tool", "agent", args, "--auto-approve", "-C", str(workspace), timeout=120)
    assert proc.returncode == 1, proc.stderr
    value = json.loads(proc.stdout)
    assert value["status"] == "schema_invalid" and value["reply"] == "still no" and len(value["errors"]) == 1


# --- agents other than Claude: pi repairs over its session, Grok on its CLI gets no repair turn ----

@pytest.fixture
def pi(tmp_path, user_home, scv_home):
    (scv_home / "config.toml").write_text(on_cli())
    agent_dir = scv_home / "agents" / "pi" / ".pi" / "agent"
    agent_dir.mkdir(parents=True)
    (agent_dir / "auth.json").write_text('{"scv": {"type": "api_key", "key": "k"}}')
    return install(user_home / ".local" / "bin", "pi", tmp_path / "log" / "pi")


def pi_answers(fake, *replies: str) -> None:
    """The fake pi's n-th run replays a real capture with its reply swapped for replies[n]."""
    q = shlex.quote
    turn = capture("pi", "text_defaults_from_settings").with_suffix(".jsonl")
    branches = []
    for n, reply in enumerate(replies):
        escaped = json.dumps(reply)[1:-1].replace("\\", "\\\\").replace("/", "\\/").replace("&", "\\&")
        branches.append(f'if [ "$n" = {n} ]; then sed {q("s/hi from fake/" + escaped + "/g")} {q(str(turn))}; fi')
    fake.write("\n".join(branches) + "\nexit 0\n")


def test_pi_is_repaired_over_its_own_session(pi, make_runner):
    pi_answers(pi, "It passed, I think.", '```json\n{"verdict": "pass"}\n```')
    ok, value = call(make_runner(), {"agent": "pi", "prompt": "check", "schema": SCHEMA})
    assert ok and value["structured"] == {"verdict": "pass"} and value["turn"] == 2, value
    first, repair = pi.calls()
    assert "--session" in repair and "did not give a JSON document" in repair[-1]


@pytest.fixture
def grok(tmp_path, user_home, scv_home):
    (scv_home / "config.toml").write_text(on_cli('[agents.grok]\npermissions = "full"\n'))
    (scv_home / "agents" / "grok" / ".grok").mkdir(parents=True)
    (scv_home / "agents" / "grok" / ".grok" / "auth.json").write_text('{"token": "x"}')
    return install(user_home / ".local" / "bin", "grok", tmp_path / "log" / "grok")


def test_grok_on_its_cli_is_checked_without_a_repair_turn(grok, make_runner):
    grok.write("echo 'It passed.'\n")
    ok, value = call(make_runner(), {"agent": "grok", "prompt": "check", "schema": SCHEMA})
    assert not ok and value["status"] == "schema_invalid" and value["reply"] == "It passed.\n", value
    assert len(grok.calls()) == 1                # no session to repair over: one run only
    assert grok.calls()[0][-1].startswith("check\n\nStructured result")


def test_grok_on_its_cli_with_a_valid_reply_gains_structured(grok, make_runner):
    grok.write("""printf '%s\\n' 'Checked.' '```json' '{"verdict": "fail"}' '```'\n""")
    ok, value = call(make_runner(), {"agent": "grok", "prompt": "check", "schema": SCHEMA})
    assert ok and value["structured"] == {"verdict": "fail"} and len(grok.calls()) == 1, value


def test_a_repair_turn_that_times_out_ends_timeout_not_schema_invalid(claude, make_runner):
    q = shlex.quote
    turn = capture("claude", "resume_turn1").with_suffix(".jsonl")
    claude.write(f'if [ "$n" = 0 ]; then cat {q(str(turn))}; exit 0; fi\nsleep 60\n')   # the repair never answers
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "check", "schema": SCHEMA, "timeout_seconds": 8})
    assert not ok and value["status"] == "timeout" and "errors" not in value, value
    assert len(claude.calls()) == 2 and value["session"] == "claude-1"
