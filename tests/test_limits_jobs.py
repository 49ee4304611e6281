"""Limits on background jobs through a real `scv exec`: a background `agent` job gets what is left
of the run's budget as its allowance, is stopped by it with status `limit` (its conversation
kept), and its spend counts in the run's total, so the run stops after it; a limit reached while an
approval request waits answers it cancelled; a job still running when the run's budget is spent
is stopped and settles as `limit`."""

from tests.agent_fakes import install, on_cli
from tests.conftest import run_scv
from tests.fakes import events, write_script
from tests.test_limits_agents import CLAUDE_LOOP, assert_stopped


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


def _job_then_write(tmp_path, user_home, scv_home):
    """A run limited to 5 turns whose script starts a looping Claude in the background (its own
    allowance 8), then asks to write a file: the script's path."""
    (scv_home / "config.toml").write_text(on_cli("[limits]\nmax_turns = 5\n\n[agents.claude]\nmax_turns = 8\n"))
    fake = install(user_home / ".local" / "bin", "claude", tmp_path / "log" / "claude")
    fake.write(CLAUDE_LOOP)
    return write_script(tmp_path / "s.jsonl",
                        {"calls": [{"id": "b", "tool": "agent",
                                    "args": {"agent": "claude", "prompt": "loop", "background": True}},
                                   {"id": "w", "tool": "write",
                                    "args": {"path": "made.txt", "content": "yes", "mode": "create"}}]},
                        {"text": "never asked"})


def test_a_limit_reached_while_an_approval_waits_answers_it_cancelled_then_stops(tmp_path, user_home, workspace,
                                                                               scv_home, clients):
    """`scv server --stdio`: the client approves a background job, then leaves the next call's
    approval request unanswered; the job spends the rest of the run's budget meanwhile, so the
    request is resolved (approved false, reason limit), the call does not run, and the turn ends
    with status limit and no further model request."""
    script = _job_then_write(tmp_path, user_home, scv_home)
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


# One model response (reported), then a marker for the foreground, then nothing until stopped.
CLAUDE_ONE_THEN_HANG = r'''echo $$ > "$(dirname "$0")/pid"
echo '{"type":"system","subtype":"init","session_id":"hang-session-1"}'
echo '{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"working"}],"usage":{"input_tokens":100,"output_tokens":10}}}'
touch "MARKER"
while true; do sleep 0.05; done
'''


def test_a_running_job_stops_with_status_limit_when_the_foreground_spends_the_rest(tmp_path, user_home, workspace,
                                                                                  scv_home):
    """--max-turns 4: the job's allowance is the 3 left after the first response, and it takes
    one; the foreground's next three responses (waiting for the job's first turn) reach 4 of the
    run's turns with the job's one: the run stops, and so does the running job, as `limit`."""
    marker = tmp_path / "job-answered"
    (scv_home / "config.toml").write_text(on_cli("[agents.claude]\nmax_turns = 8\n"))
    fake = install(user_home / ".local" / "bin", "claude", tmp_path / "log" / "claude")
    fake.write(CLAUDE_ONE_THEN_HANG.replace("MARKER", str(marker)))
    def read(call_id: str) -> dict:
        return {"calls": [{"id": call_id, "tool": "read", "args": {"path": "notes.txt"}}]}
    (workspace / "notes.txt").write_text("x\n")
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "b", "tool": "agent",
                                      "args": {"agent": "claude", "prompt": "work", "background": True}}]},
                          {"calls": [{"id": "w", "tool": "bash", "args": {
                              "command": f"while [ ! -e {marker} ]; do sleep 0.05; done"}}]},
                          read("r1"), read("r2"), {"text": "never asked"})
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "-C", str(workspace),
                   "--max-turns", "4", timeout=180)
    assert proc.returncode == 3, proc.stderr
    seen = events(proc.stdout)
    first = next(e for e in seen if e["type"] == "turn.completed")
    assert first["limit"] == {"kind": "turns", "max": 4, "used": 4}
    # The job was stopped (its process gone) and settled as limit; its report turn says so.
    assert_stopped(fake)
    report = next(e for e in seen if e["type"] == "turn.started" and e.get("origin"))
    assert report["origin"]["jobs"] == [{"job": "job-1", "agent": "claude", "status": "limit"}]
    assert "status limit" in report["prompt"] and "the run's limit was reached" in report["prompt"]
    # Its one turn and its tokens are in the run's total.
    assert proc.stderr.strip().splitlines()[-1] == ("scv: usage: 5 turns, 100 input tokens (0 cached), "
                                                    "10 output tokens, cost unknown")


def test_a_terminal_approval_prompt_waiting_at_a_limit_is_withdrawn(tmp_path, user_home, workspace, scv_home):
    """`scv exec` on a terminal: the person allows the background job at the y/N prompt, then
    leaves the next call's prompt unanswered; the job's spend reaches the run's limit, so the
    prompt is withdrawn (denied), the call does not run, and scv exec exits 3."""
    import os
    import pty
    import subprocess
    import sys

    from tests.conftest import scv_env
    script = _job_then_write(tmp_path, user_home, scv_home)
    terminal, person = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "scv", "exec", "go", "--script", str(script), "--json",
                             "-C", str(workspace)], stdin=person, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=scv_env())
    os.close(person)
    try:
        said = b""
        while said.count(b"Allow? [y/N] ") < 1:
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, said
            said += chunk
        os.write(terminal, b"y\n")
        while said.count(b"Allow? [y/N] ") < 2:
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, said
            said += chunk
        out, err = proc.communicate(timeout=180)    # the second prompt is never answered
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(terminal)
    said += err
    assert proc.returncode == 3, said
    assert b"not asked any more (the turn stopped); denied" in said
    seen = events(out.decode())
    write = next(e for e in seen if e["type"] == "tool.completed" and e["tool"] == "write")
    assert write["ok"] is False and write["result"]["error"].startswith("not run: the turns limit was reached")
    resolved = [e for e in seen if e["type"] == "approval.resolved"]
    assert [e.get("reason") for e in resolved] == [None, "limit"]
    assert not (workspace / "made.txt").exists()
