"""`scv batch-report` and `scv batch --report`: the Markdown report and JUnit XML read back with
junitparser (one test case per task; failure vs error vs skipped by status)."""

import json

from junitparser import Error, Failure, JUnitXml, Skipped

from tests.batch_fakes import write_lines, write_tasks
from tests.conftest import run_scv
from tests.delegation_fakes import fake_agent
from tests.fakes import setup_fake_home

RESULTS = [
    {"id": "ok", "agent": "codex", "status": "completed", "elapsed_seconds": 3.5,
     "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"id": "broke", "agent": "claude", "status": "failed", "error": "the check `pytest -q` failed (exit code 1) "
     "after 2 attempt(s)", "elapsed_seconds": 9.25, "branch": "scv/out/broke", "commit": "ab" * 20,
     "verify": [{"command": "pytest -q", "exit_code": 1, "output_tail": "1 failed, 3 passed"}]},
    {"id": "bad-shape", "agent": "codex", "status": "schema_invalid", "error": "the reply is not the schema",
     "elapsed_seconds": 1},
    {"id": "stopped", "agent": "codex", "status": "cancelled", "elapsed_seconds": 0.5},
    {"id": "gone", "agent": "pi", "status": "lost", "error": "node n1 died", "elapsed_seconds": 2},
    {"id": "waited", "agent": "codex", "status": "quota", "error": "codex's usage limit resets past --quota-wait",
     "elapsed_seconds": 0},
]


def test_junit_and_markdown_say_what_happened_to_each_task(tmp_path):
    results = write_lines(tmp_path / "out.jsonl", *(json.dumps(line) for line in RESULTS))
    tasks = write_lines(tmp_path / "tasks.jsonl", *(json.dumps({"id": line["id"], "prompt": "p"}) for line in RESULTS),
                        json.dumps({"id": "later", "prompt": "p"}))
    junit, markdown = tmp_path / "report.xml", tmp_path / "report.md"
    proc = run_scv("batch-report", str(results), "--tasks", str(tasks), "--junit", str(junit), "--markdown",
                   str(markdown))
    assert proc.returncode == 0, proc.stderr      # written: 0, whatever the tasks' statuses
    suites = list(JUnitXml.fromfile(str(junit)))
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, 2, 3, 1)
    cases = {case.name: case for case in suite}
    assert set(cases) == {line["id"] for line in RESULTS} | {"later"}
    assert cases["ok"].classname == "scv.batch.codex" and cases["ok"].result == [] and cases["ok"].time == 3.5
    assert cases["broke"].classname == "scv.batch.claude"
    [broke] = cases["broke"].result
    assert isinstance(broke, Failure) and broke.type == "failed"
    assert "1 failed, 3 passed" in broke.text and "scv/out/broke" in broke.text
    assert isinstance(cases["bad-shape"].result[0], Failure)
    assert all(isinstance(cases[i].result[0], Error) for i in ("stopped", "gone", "waited"))
    assert isinstance(cases["later"].result[0], Skipped)
    text = markdown.read_text()
    assert "7 task(s): 1 cancelled, 1 completed, 1 failed, 1 lost, 1 quota, 1 schema_invalid, 1 not started" in text
    assert "- codex: input_tokens 100, output_tokens 20" in text
    assert text.index("- broke: 9.25 s") < text.index("- ok: 3.5 s")
    assert "| broke | claude | failed | the check `pytest -q` failed (exit code 1) after 2 attempt(s) | pytest -q " \
           "| scv/out/broke |" in text
    summary = json.loads(run_scv("batch-report", str(results), "--json").stdout)
    assert summary["by_status"]["failed"] == 1 and summary["tasks"] == 6


def test_a_file_that_is_not_results_is_refused_and_scv_batch_writes_its_report(tmp_path, monkeypatch, workspace):
    notes = write_lines(tmp_path / "notes.txt", "milk", "eggs")
    proc = run_scv("batch-report", str(notes), "--junit", str(tmp_path / "r.xml"))
    assert proc.returncode == 2 and "line 1 is not a batch result" in proc.stderr
    assert not (tmp_path / "r.xml").exists()
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", """printf '%s\\n' '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"done"}}'\n""")
    report = tmp_path / "batch.md"
    done = run_scv("batch", str(write_tasks(tmp_path / "b.jsonl", "one", "two")), "--report", str(report),
                   "-C", str(workspace))
    assert done.returncode == 0, done.stderr
    assert "2 task(s): 2 completed" in report.read_text()


def test_an_agents_cost_is_unknown_when_one_of_its_tasks_cost_is(tmp_path):
    lines = [{"id": "a", "agent": "codex", "status": "completed", "elapsed_seconds": 1,
              "usage": {"turns": 2, "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.25, "cost_source": "prices"}},
             {"id": "b", "agent": "codex", "status": "completed", "elapsed_seconds": 1,
              "usage": {"turns": 1, "input_tokens": 7, "output_tokens": 1, "cost_usd": None, "cost_source": None}},
             {"id": "c", "agent": "claude", "status": "completed", "elapsed_seconds": 1,
              "usage": {"turns": 1, "input_tokens": 3, "output_tokens": 2, "cost_usd": 0.5,
                        "cost_source": "reported"}}]
    results = write_lines(tmp_path / "out.jsonl", *(json.dumps(line) for line in lines))
    summary = json.loads(run_scv("batch-report", str(results), "--json").stdout)
    assert summary["usage"]["codex"] == {"turns": 3, "input_tokens": 17, "output_tokens": 6, "cost_usd": None}
    assert summary["usage"]["claude"]["cost_usd"] == 0.5
    markdown = tmp_path / "r.md"
    assert run_scv("batch-report", str(results), "--markdown", str(markdown)).returncode == 0
    assert "- codex: cost_usd unknown, input_tokens 17, output_tokens 6, turns 3" in markdown.read_text()
