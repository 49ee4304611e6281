"""Limits on background jobs through a real `scv exec`: a background `agent` job gets what is left
of the run's budget as its allowance, is stopped by it with status `limit` (its conversation
kept), and its spend counts in the run's total, so the run stops after it."""

import json

from tests.agent_fakes import install, on_cli
from tests.conftest import run_scv
from tests.fakes import events, write_script
from tests.test_limits_agents import CLAUDE_LOOP


def test_a_background_job_is_stopped_by_its_allowance_and_counts_in_the_run(tmp_path, user_home, workspace,
                                                                             scv_home):
    (scv_home / "config.toml").write_text(on_cli("[agents.claude]\nmax_turns = 8\n"))
    fake = install(user_home / ".local" / "bin", "claude", tmp_path / "log" / "claude")
    fake.write(CLAUDE_LOOP)
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "b", "tool": "agent",
                                      "args": {"agent": "claude", "prompt": "loop", "background": True}}]},
                          {"calls": [{"id": "w", "tool": "agent_wait",
                                      "args": {"job": "job-1", "timeout_seconds": 120}}]},
                          {"text": "never asked"})
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "-C", str(workspace),
                   "--max-turns", "5", timeout=180)
    seen = events(proc.stdout)
    # One model response spent, so the job's allowance is the run's 4 left (its agent's own 8 is more).
    waited = next(e for e in seen if e["type"] == "tool.completed" and e["tool"] == "agent_wait")["result"]
    job = waited["jobs"][0] if "jobs" in waited else waited
    assert job["status"] == "limit", job
    assert job["result"]["status"] == "limit"
    assert job["result"]["limit"] == {"kind": "turns", "max": 4, "used": 4}
    assert job["result"]["usage"]["turns"] == 4 and job["result"]["usage"]["input_tokens"] == 400
    assert job["result"]["session"] == "claude-1"
    # The run's total has the job's 4 turns and tokens: over its 5 after the second response.
    assert proc.returncode == 3, proc.stderr
    final = seen[-1]
    assert final["type"] == "turn.completed" and final["limit"] == {"kind": "turns", "max": 5, "used": 6}
    assert final["usage"]["turns"] == 6 and final["usage"]["input_tokens"] == 400
    assert final["usage"]["cached_input_tokens"] == 200
    assert "usage: 6 turns" in proc.stderr


def test_a_limit_reached_while_an_approval_waits_answers_it_cancelled_then_stops(tmp_path, user_home, workspace,
                                                                               scv_home, clients):
    """`scv server --stdio`: the client approves a background job, then leaves the next call's
    approval request unanswered; the job spends the rest of the run's budget meanwhile, so the
    request is resolved (approved false, reason limit), the call does not run, and the turn ends
    with status limit and no further model request."""
    (scv_home / "config.toml").write_text(on_cli("[limits]\nmax_turns = 5\n\n[agents.claude]\nmax_turns = 8\n"))
    fake = install(user_home / ".local" / "bin", "claude", tmp_path / "log" / "claude")
    fake.write(CLAUDE_LOOP)
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "b", "tool": "agent",
                                      "args": {"agent": "claude", "prompt": "loop", "background": True}},
                                     {"id": "w", "tool": "write",
                                      "args": {"path": "made.txt", "content": "yes", "mode": "create"}}]},
                          {"text": "never asked"})
    client = clients("--script", str(script))
    client.start(cwd=str(workspace))
    client.request("turn.start", {"prompt": "go"})
    delegate = client.until("approval.requested")
    assert delegate.params["tool"] == "agent"
    client.request("approval.resolve", {"id": delegate.params["id"], "approved": True})
    asked = client.until("approval.requested", tool="write")
    # Left unanswered: the job's 4 turns (the run's 5 less the one response) end the wait.
    resolved = client.until("approval.resolved", timeout=120, id=asked.params["id"])
    assert resolved.params == {"turn_id": asked.params["turn_id"], "id": asked.params["id"], "approved": False,
                               "reason": "limit"}
    done = client.until("turn.completed", timeout=60)
    assert done.params["limit"] == {"kind": "turns", "max": 5, "used": 5}
    assert done.params["reply"] == "" and done.params["usage"]["turns"] == 5
    write = next(c for c in client.notifications("tool.completed") if c["tool"] == "write")
    assert write["ok"] is False and write["result"]["error"].startswith("not run: the turns limit was reached")
    assert not (workspace / "made.txt").exists()
    late = client.response(client.send("approval.resolve", {"id": asked.params["id"], "approved": True}))
    assert late.error is not None
