"""Batch lines' `schema` (issue 21) through real processes and a fake Codex CLI: an inline schema
and a file schema (relative to the batch file), a repair turn over the task's conversation
(`exec resume`, and the scripted ACP peer's next prompt), `schema_invalid` with exit 1, and a bad
schema stopping the batch before any task starts."""

import json

from tests.conftest import run_scv
from tests.delegation_fakes import fake_agent
from tests.fakes import setup_fake_home
from tests.live_fakes import install_peer

SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]}

# Answers prose to a new task, and the document when resumed (the repair turn), unless a task's
# prompt said "stubborn" (remembered in a file), which always gets prose.
AGENT = """prompt="${@: -1}"
printf '%s\\n' "$*" >> LOG
echo '{"type":"thread.started","thread_id":"thread-1"}'
text='done, all good'
case "$*" in *stubborn*) touch LOG.stubborn ;; esac
case "$*" in
  *" resume "*) [ -e LOG.stubborn ] || text='{\\"verdict\\":\\"pass\\"}' ;;
esac
printf '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"%s"}}\\n' "$text"
"""


def setup(tmp_path, monkeypatch):
    setup_fake_home(tmp_path, monkeypatch)
    log = tmp_path / "calls.txt"
    fake_agent(tmp_path, "codex", AGENT.replace("LOG", str(log)))
    return log


def results(path) -> dict[str, dict]:
    return {r["id"]: r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip())}


def test_inline_and_file_schemas_get_a_repair_turn_over_the_conversation(tmp_path, monkeypatch, workspace):
    log = setup(tmp_path, monkeypatch)
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "verdict.json").write_text(json.dumps(SCHEMA))
    batch = tmp_path / "b.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in [
        {"id": "inline", "agent": "codex", "prompt": "check a", "schema": SCHEMA},
        {"id": "file", "agent": "codex", "prompt": "check b", "schema": "schemas/verdict.json"},
        {"id": "plain", "agent": "codex", "prompt": "check c"},
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--output", str(out), "-C", str(workspace), timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = results(out)
    assert found["inline"]["structured"] == {"verdict": "pass"} and found["inline"]["status"] == "completed"
    assert found["file"]["structured"] == {"verdict": "pass"}
    assert "structured" not in found["plain"] and found["plain"]["reply"] == "done, all good"
    calls = log.read_text().splitlines()
    assert sum(" resume " in c for c in calls) == 2          # one repair turn each, none for plain
    assert sum("Structured result" in c for c in calls) == 2


def test_schema_invalid_exits_1(tmp_path, monkeypatch, workspace):
    setup(tmp_path, monkeypatch)
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"id": "s", "agent": "codex", "prompt": "stubborn", "schema": SCHEMA}) + "\n")
    out = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--output", str(out), "-C", str(workspace), timeout=120)
    assert proc.returncode == 1, proc.stderr
    line = results(out)["s"]
    assert line["status"] == "schema_invalid" and line["reply"] == "done, all good"
    assert line["errors"][0]["path"] == "" and "no ```json fenced block" in line["errors"][0]["message"]


def test_a_bad_schema_is_a_bad_line_and_nothing_starts(tmp_path, monkeypatch, workspace):
    log = setup(tmp_path, monkeypatch)
    batch = tmp_path / "b.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in [
        {"id": "a", "agent": "codex", "prompt": "p", "schema": "missing.json"},
        {"id": "b", "agent": "codex", "prompt": "p", "schema": {"type": "nope"}},
        {"id": "c", "agent": "codex", "prompt": "p", "schema": SCHEMA},
    ]) + "\n")
    proc = run_scv("batch", str(batch), "-C", str(workspace), timeout=120)
    assert proc.returncode == 2
    assert "has 2 bad line(s)" in proc.stderr
    assert "line 1: the schema file" in proc.stderr and "does not exist" in proc.stderr
    assert "relative to the batch file" in proc.stderr
    assert "line 2: agent schema is not a valid Draft 2020-12 schema: at '/type'" in proc.stderr
    assert not log.exists()


def test_the_repair_turn_continues_an_acp_conversation(tmp_path, monkeypatch, workspace):
    home = setup_fake_home(tmp_path, monkeypatch)
    server = install_peer(home, tmp_path / "peer-log", "claude-agent-acp")
    batch = tmp_path / "b.jsonl"
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "turn": {"const": 2}}}
    batch.write_text(json.dumps({"id": "acp", "agent": "claude", "prompt": "count", "schema": schema}) + "\n")
    out = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--output", str(out), "-C", str(workspace), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert results(out)["acp"]["structured"] == {"verdict": "pass", "turn": 2}
    prompts = server.events("session/prompt")
    assert [p["turn"] for p in prompts] == [1, 2]
    assert len({p["session_id"] for p in prompts}) == 1 and len({p["pid"] for p in prompts}) == 1
