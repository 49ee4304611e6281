"""`scv exec --output-schema` (issue 21) as a real process: the script provider and the fake
OpenAI-compatible server answer valid JSON, prose, a fenced document, invalid then repaired,
invalid twice, and a task that edits a file first; bad schemas stop the run before any request."""

import json

import pytest

from tests.conftest import run_scv, scv_env
from tests.fake_openai import FakeOpenAI, Reply
from tests.delegation_fakes import codex_reply_lines, fake_agent
from tests.fakes import events, setup_fake_home, write_script

SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]},
                                           "failing": {"type": "array", "items": {"type": "string"}}},
          "required": ["verdict", "failing"], "additionalProperties": False}


@pytest.fixture
def schema_file(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


@pytest.fixture
def model(tmp_path):
    """A fake chat-completions server and a home whose config points at it: (fake, its env)."""
    fake = FakeOpenAI()
    scv_home = tmp_path / "home"
    scv_home.mkdir()
    (scv_home / "config.toml").write_text(fake.config("chat"))
    yield fake, scv_env(SCV_HOME=str(scv_home), FAKE_OPENAI_KEY="sk-test")
    fake.close()


def exec_script(workspace, tmp_path, schema_file, *turns, json_events=False):
    script = write_script(tmp_path / "s.jsonl", *turns)
    extra = ("--json",) if json_events else ()
    return run_scv("exec", "check it", "--script", str(script), "--output-schema", str(schema_file), *extra,
                   "--auto-approve", "-C", str(workspace), timeout=60)


def test_valid_json_reply_prints_only_the_compact_document(workspace, tmp_path, schema_file):
    proc = exec_script(workspace, tmp_path, schema_file, {"text": '{ "verdict": "fail",\n  "failing": ["a/b"] }'})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"verdict":"fail","failing":["a/b"]}\n'


def test_one_json_fence_in_prose_is_the_document(workspace, tmp_path, schema_file):
    reply = 'All green.\n\n```Json\n{"verdict": "pass", "failing": []}\n```\nThat is all.'
    proc = exec_script(workspace, tmp_path, schema_file, {"text": reply}, json_events=True)
    assert proc.returncode == 0, proc.stderr
    done = events(proc)[-1]
    assert done["type"] == "turn.completed" and done["structured"] == {"verdict": "pass", "failing": []}
    assert done["reply"] == reply     # --json: only events on stdout, never the bare document


def test_prose_then_repaired_in_the_same_session(workspace, tmp_path, schema_file):
    proc = exec_script(workspace, tmp_path, schema_file, {"text": "Everything passed."},
                       {"text": '{"verdict": "pass", "failing": []}'}, json_events=True)
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    assert [e["type"] for e in seen].count("turn.started") == 1       # the repair is within the turn
    assert seen[-1]["structured"] == {"verdict": "pass", "failing": []}


def test_invalid_twice_ends_schema_invalid_with_exit_4(workspace, tmp_path, schema_file):
    proc = exec_script(workspace, tmp_path, schema_file, {"text": '{"verdict": "maybe", "failing": [1]}'},
                       {"text": '{"verdict": "maybe", "failing": [1]}'}, json_events=True)
    assert proc.returncode == 4, proc.stderr
    failed = events(proc)[-1]
    assert failed["type"] == "turn.failed" and failed["reason"] == "schema_invalid"
    assert failed["errors"] == [{"path": "/failing/0", "message": "1 is not of type 'string'"},
                                {"path": "/verdict", "message": "'maybe' is not one of ['pass', 'fail']"}]
    assert failed["reply"] == '{"verdict": "maybe", "failing": [1]}'
    plain = exec_script(workspace, tmp_path, schema_file, {"text": "no"}, {"text": "still no"})
    assert plain.returncode == 4 and plain.stdout == ""
    assert "schema_invalid" not in plain.stdout and "still no" in plain.stderr


@pytest.mark.parametrize("reply, why", [
    ('{"verdict": "pass", "failing": []} and some words', "text after its JSON document"),
    ('```json\n{"verdict": "pass", "failing": []}\n```\n```json\n{}\n```', "2 ```json fenced blocks"),
    ('```json\n{"verdict": "pass",\n "failing": [}\n```', "line 2, column"),
])
def test_ambiguous_replies_are_invalid_and_the_repair_says_why(workspace, model, schema_file, reply, why):
    fake, env = model
    fake.enqueue(Reply(text=reply), Reply(text='{"verdict": "fail", "failing": ["t"]}'))
    proc = run_scv("exec", "go", "--output-schema", str(schema_file), "-C", str(workspace), timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"verdict":"fail","failing":["t"]}\n'
    first, second = fake.requests
    system = first.body["messages"][0]["content"]
    assert "Structured result" in system and json.dumps(SCHEMA, separators=(",", ":")) in system
    repair = second.body["messages"][-1]
    assert repair["role"] == "user" and why in repair["content"]
    assert [t["function"]["name"] for t in first.body["tools"]] == [t["function"]["name"]
                                                                   for t in second.body["tools"]]


def test_a_schema_task_edits_a_file_first(workspace, tmp_path, schema_file):
    proc = exec_script(workspace, tmp_path, schema_file,
                       {"text": "fixing", "calls": [{"id": "w", "tool": "write",
                                                     "args": {"path": "fix.txt", "content": "fixed\n",
                                                              "mode": "create"}}]},
                       {"text": '{"verdict": "pass", "failing": []}'})
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "fix.txt").read_text() == "fixed\n"
    assert proc.stdout == '{"verdict":"pass","failing":[]}\n'


def test_a_reply_over_the_output_limit_is_too_large_not_truncated(workspace, tmp_path, schema_file, scv_home):
    (scv_home / "config.toml").write_text("[tools]\noutput_limit_bytes = 1024\n")
    big = json.dumps({"verdict": "fail", "failing": ["x" * 50] * 40})
    proc = exec_script(workspace, tmp_path, schema_file, {"text": big}, {"text": big}, json_events=True)
    assert proc.returncode == 4
    assert "over tools.output_limit_bytes (1024)" in events(proc)[-1]["errors"][0]["message"]


@pytest.mark.parametrize("content, said", [
    (None, "does not exist"),
    ('{"type": "object",\n  "properties": }', "not valid JSON at line 2, column 17"),
    ("[1]", "is not a JSON object"),
    ('{"type": "object", "properties": {"a": {"type": 7}}}', "at '/properties/a/type'"),
    ('{"$ref": "https://example.invalid/s.json"}', "$ref outside itself at '/$ref'"),
    ('{"properties": {"a": {"$ref": "other.json#/x"}}}', "at '/properties/a/$ref'"),
])
def test_unusable_schemas_exit_2_before_any_model_request(workspace, tmp_path, model, content, said):
    fake, env = model
    schema = tmp_path / "schema.json"
    if content is not None:
        schema.write_text(content)
    proc = run_scv("exec", "go", "--output-schema", str(schema), "--json", "-C", str(workspace), timeout=60, env=env)
    assert proc.returncode == 2
    assert said in proc.stderr and "schema.json" in proc.stderr
    assert [e["type"] for e in events(proc)] == ["error"]
    assert fake.requests == []


def test_a_schema_over_one_mib_is_refused(workspace, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"enum": ["x" * 1000] * 1100}))
    script = write_script(tmp_path / "s.jsonl", {"text": "{}"})
    proc = run_scv("exec", "go", "--script", str(script), "--output-schema", str(schema), "-C", str(workspace))
    assert proc.returncode == 2 and "over the 1 MiB bound" in proc.stderr


def test_schema_from_stdin_is_refused(workspace, tmp_path):
    script = write_script(tmp_path / "s.jsonl", {"text": "{}"})
    proc = run_scv("exec", "go", "--script", str(script), "--output-schema", "-", "-C", str(workspace))
    assert proc.returncode == 2 and "--output-schema - is not allowed" in proc.stderr


def test_with_a_background_job_the_last_turn_after_its_report_is_validated(workspace, tmp_path, schema_file,
                                                                         monkeypatch, scv_home):
    """The first turn ends in prose while its job runs; the report's turn answers the document:
    no repair is spent on the first turn, and stdout holds only the final document."""
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", codex_reply_lines("all tests pass"))
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "b", "tool": "agent",
                                      "args": {"agent": "codex", "prompt": "run the tests", "background": True}}]},
                          {"text": "started {{b.job}}, waiting for it"},
                          {"text": '{"verdict": "pass", "failing": []}'})
    proc = run_scv("exec", "check it", "--script", str(script), "--output-schema", str(schema_file), "--json",
                   "--auto-approve", "-C", str(workspace), timeout=60)
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    assert [e["type"] for e in seen if e["type"].startswith("turn.")] == \
        ["turn.started", "turn.completed", "turn.started", "turn.completed"]
    report = [e for e in seen if e["type"] == "turn.started"][1]
    assert report["prompt"].startswith("[SCV background report]") and "all tests pass" in report["prompt"]
    assert seen[-1]["structured"] == {"verdict": "pass", "failing": []}
    assert "structured" not in [e for e in seen if e["type"] == "turn.completed"][0]
    plain = run_scv("exec", "check it", "--script", str(script), "--output-schema", str(schema_file),
                    "--auto-approve", "-C", str(workspace), timeout=60)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == '{"verdict":"pass","failing":[]}\n'
