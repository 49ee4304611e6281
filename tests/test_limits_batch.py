"""Batch limits through a real `scv batch` and a fake Claude CLI that reports its cost: the whole
batch's --max-cost-usd, after which no task starts (100 tasks, 5 run), never-started tasks
written as `limit`, exit 3, and the total on the tally; a line's own max_turns on a looping agent."""

import json

from tests.conftest import run_scv
from tests.delegation_fakes import fake_agent
from tests.fakes import setup_fake_home

# One response a run, and $0.01 reported for it; the prompt goes to the log.
PAID = r'''echo "${@: -1}" >> LOG
echo '{"type":"system","subtype":"init","session_id":"paid-1"}'
echo '{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":100,"output_tokens":10}}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"paid-1","total_cost_usd":0.01,"usage":{"input_tokens":100,"output_tokens":10,"cache_read_input_tokens":0}}'
'''

LOOP = r'''echo '{"type":"system","subtype":"init","session_id":"loop-1"}'
i=0
while true; do
  i=$((i+1))
  echo "{\"type\":\"assistant\",\"message\":{\"id\":\"m$i\",\"model\":\"claude-x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}"
  sleep 0.01
done
'''


def lines_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_no_task_starts_once_the_batch_reaches_its_usd_limit(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    log = tmp_path / "prompts.txt"
    fake_agent(tmp_path, "claude", PAID.replace("LOG", str(log)))
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(json.dumps({"id": f"t{i:03}", "agent": "claude", "prompt": f"task {i}"}) + "\n"
                             for i in range(100)))
    proc = run_scv("batch", str(batch), "--parallel", "1", "--max-cost-usd", "0.05", "-C", str(workspace),
                   timeout=300)
    assert proc.returncode == 3, proc.stderr
    results = lines_of(proc.stdout)
    assert len(results) == 100
    ran = [r for r in results if r["status"] == "completed"]
    held = [r for r in results if r["status"] == "limit"]
    assert len(ran) == 5 and len(held) == 95
    assert len(log.read_text().splitlines()) == 5           # no task started after the limit
    assert all(r["usage"]["cost_usd"] == 0.01 and r["usage"]["cost_source"] == "reported" for r in ran)
    assert all(r["usage"] is None and r["limit"]["kind"] == "cost_usd" for r in held)
    assert held[0]["limit"]["max"] == 0.05
    final = proc.stderr.strip().splitlines()[-1]
    assert "5 turns" in final and "$0.0500 (reported)" in final


def test_a_line_limit_stops_its_task(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "claude", LOOP)
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"id": "loop", "agent": "claude", "prompt": "go", "max_turns": 4}) + "\n")
    proc = run_scv("batch", str(batch), "-C", str(workspace), timeout=120)
    assert proc.returncode == 1, proc.stderr
    [result] = lines_of(proc.stdout)
    assert result["status"] == "limit" and result["limit"] == {"kind": "turns", "max": 4, "used": 4}
    assert result["usage"]["turns"] == 4


def test_a_batch_usd_limit_on_an_agent_without_cost_is_refused_before_anything_starts(tmp_path, monkeypatch,
                                                                                          workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "echo ran >> " + str(tmp_path / "ran.txt"))
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"id": "a", "agent": "codex", "prompt": "go"}) + "\n")
    proc = run_scv("batch", str(batch), "--max-cost-usd", "1", "-C", str(workspace))
    assert proc.returncode == 2
    assert "line 1" in proc.stderr and "codex" in proc.stderr and "[prices" in proc.stderr
    assert not (tmp_path / "ran.txt").exists()


def test_a_task_stopped_by_its_line_limit_is_a_failure_the_report_names_and_a_resume_runs(tmp_path, monkeypatch,
                                                                                          workspace, scv_home):
    """The issue gives exit 3 to a batch stopped by its own limit only: a task stopped by its
    line's limit is a task not completed (exit 1), a JUnit failure of type `limit` with its
    sentence, and `--rerun limit` runs it again while a completed line is kept."""
    from xml.etree import ElementTree
    setup_fake_home(tmp_path, monkeypatch)
    runs = tmp_path / "runs.txt"
    fake_agent(tmp_path, "claude", f"echo run >> {runs}\n" + LOOP)
    batch, out = tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    batch.write_text(json.dumps({"id": "loop", "agent": "claude", "prompt": "go", "max_turns": 2}) + "\n")
    first = run_scv("batch", str(batch), "--output", str(out), "-C", str(workspace), timeout=120)
    assert first.returncode == 1, first.stderr
    [stopped] = lines_of(out.read_text())
    assert stopped["status"] == "limit" and stopped["limit"] == {"kind": "turns", "max": 2, "used": 2}
    junit = tmp_path / "r.xml"
    report = run_scv("batch-report", str(out), "--junit", str(junit), "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["by_status"] == {"limit": 1} and summary["failures"][0]["status"] == "limit"
    assert summary["usage"]["claude"]["turns"] == 2
    [case] = ElementTree.parse(junit).getroot().iter("testcase")
    [failure] = list(case)
    assert failure.tag == "failure" and failure.get("type") == "limit"
    assert failure.get("message").startswith("limit: ") and "turns limit" in failure.get("message")
    again = run_scv("batch", str(batch), "--output", str(out), "--rerun", "limit", "-C", str(workspace), timeout=120)
    assert again.returncode == 1, again.stderr
    [rerun] = lines_of(out.read_text())
    assert rerun["status"] == "limit" and rerun["usage"]["turns"] == 2
    assert runs.read_text().splitlines() == ["run", "run"]      # run again with a fresh allowance
