"""Usage limits pause an agent instead of failing its tasks, through real processes and fake agent
CLIs: Claude Code's rejected `rate_limit_event` with a reset a few seconds ahead (no task fails,
the pause is printed, nothing runs before the reset), `--fallback` moving a paused agent's task to
another agent without the line's model, Codex's 429 without a reset backing off until the task
ends `quota`, a reset later than `--quota-wait` ending it at once, `--rerun quota`, and a driver
SIGKILLed during a pause whose resume runs the waiting tasks."""

import json
import signal
import threading

from tests.batch_fakes import write_lines
from tests.conftest import run_scv
from tests.delegation_fakes import fake_agent
from tests.fakes import scv_process, setup_fake_home, wait_for

# The first two calls (whichever tasks make them) are refused with a reset RESET_IN seconds ahead.
CLAUDE = """state={state}
if mkdir "$state/hit1" 2>/dev/null || mkdir "$state/hit2" 2>/dev/null; then
  reset=$(( $(date +%s) + {reset_in} ))
  echo "limit $reset" >> "$state/log"
  echo '{{"type":"system","subtype":"init","session_id":"s-limit"}}'
  echo '{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":'$reset',"rateLimitType":"five_hour"}}}}'
  echo '{{"type":"assistant","message":{{"model":"<synthetic>","content":[{{"type":"text","text":"You have hit your limit"}}]}},"error":"rate_limit"}}'
  echo '{{"type":"result","subtype":"success","is_error":true,"result":"You have hit your limit","api_error_status":429,"session_id":"s-limit"}}'
  exit 1
fi
echo "ok $(date +%s)" >> "$state/log"
echo '{{"type":"system","subtype":"init","session_id":"s-ok"}}'
echo '{{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s-ok"}}'
"""

# Codex refused with a plain 429 (no reset) while {state}/closed exists.
CODEX = """state={state}
echo call >> "$state/codex"
if [ -e "$state/closed" ]; then
  echo '{{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}}'
  echo '{{"type":"turn.failed","error":{{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}}}'
  exit 1
fi
echo '{{"type":"thread.started","thread_id":"thread-1"}}'
printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"done"}}}}'
"""


def results(path) -> dict[str, dict]:
    return {line["id"]: line for line in map(json.loads, path.read_text().splitlines()) if line}


def lines(path, *tasks):
    return write_lines(path, *(json.dumps(task) for task in tasks))


def test_a_usage_limit_with_a_reset_pauses_the_agent_and_no_task_fails(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    state = tmp_path / "state"
    state.mkdir()
    fake_agent(tmp_path, "claude", CLAUDE.format(state=state, reset_in=3))
    batch = lines(tmp_path / "b.jsonl", *({"id": f"t{i}", "agent": "claude", "prompt": f"do {i}"} for i in range(3)))
    output = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--parallel", "2", "--output", str(output), "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    found = results(output)
    assert {k: v["status"] for k, v in found.items()} == {"t0": "completed", "t1": "completed", "t2": "completed"}
    assert "claude paused until " in proc.stderr and "(usage limit)" in proc.stderr
    log = (state / "log").read_text().split()
    resets = [int(v) for k, v in zip(log[::2], log[1::2]) if k == "limit"]
    done = [int(v) for k, v in zip(log[::2], log[1::2]) if k == "ok"]
    assert len(resets) == 2 and len(done) == 3
    assert min(done) >= max(resets)        # the agent's own clock: nothing ran before the reset


def test_fallback_moves_a_paused_agents_task_to_the_next_agent_without_its_model(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    state = tmp_path / "state"
    state.mkdir()
    (state / "closed").write_text("")
    (state / "hit1").mkdir()
    (state / "hit2").mkdir()        # claude is never limited here
    fake_agent(tmp_path, "codex", CODEX.format(state=state))
    claude = fake_agent(tmp_path, "claude", CLAUDE.format(state=state, reset_in=3))
    batch = lines(tmp_path / "b.jsonl", {"id": "a", "agent": "codex", "model": "gpt-codex-x", "prompt": "do a"})
    output = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--fallback", "claude,pi", "--output", str(output), "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    line = results(output)["a"]
    assert line["status"] == "completed" and line["agent"] == "claude"
    assert "codex paused until " in proc.stderr and "(rate limit)" in proc.stderr
    [argv] = claude.calls()
    assert "gpt-codex-x" not in argv and "do a" in argv[-1]
    assert (state / "codex").read_text().count("call") == 1
    typo = run_scv("batch", str(batch), "--fallback", "claud", "-C", str(workspace))
    assert typo.returncode == 2 and "--fallback names claud, which SCV does not know as an agent" in typo.stderr
    detached = run_scv("batch", str(batch), "--engine", "ray", "--detach", "--address", "127.0.0.1:1", "--output",
                       str(output), "--quota-wait", "60", "-C", str(workspace))
    assert detached.returncode == 2 and "are not for a detached batch" in detached.stderr


def test_a_limit_without_reset_backs_off_three_times_then_ends_quota_and_rerun_picks_it(tmp_path, monkeypatch,
                                                                                      workspace):
    setup_fake_home(tmp_path, monkeypatch)
    state = tmp_path / "state"
    state.mkdir()
    (state / "closed").write_text("")
    fake_agent(tmp_path, "codex", CODEX.format(state=state))
    batch = lines(tmp_path / "b.jsonl", {"id": "a", "agent": "codex", "prompt": "do a"})
    output = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--quota-backoff", "0.2", "--output", str(output), "-C", str(workspace))
    assert proc.returncode == 1, proc.stderr
    line = results(output)["a"]
    assert line["status"] == "quota"
    assert line["error"] == "codex still hit its rate limit after 3 waits (--quota-backoff 0.2 s, doubling)"
    assert (state / "codex").read_text().count("call") == 4         # the first try and three after a wait
    assert proc.stderr.count("codex paused until ") == 3
    report = run_scv("batch-report", str(output), "--junit", str(tmp_path / "junit.xml"))
    assert report.returncode == 0, report.stderr
    assert "<error" in (tmp_path / "junit.xml").read_text()        # quota is an error, not a failure
    (state / "closed").unlink()
    bad = run_scv("batch", str(batch), "--output", str(output), "--rerun", "quota,nope", "-C", str(workspace))
    assert bad.returncode == 2 and "--rerun names nope, which no result line has" in bad.stderr
    again = run_scv("batch", str(batch), "--output", str(output), "--rerun", "quota", "-C", str(workspace))
    assert again.returncode == 0, again.stderr
    assert results(output)["a"]["status"] == "completed"


def test_a_reset_later_than_quota_wait_ends_the_task_at_once(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    state = tmp_path / "state"
    state.mkdir()
    (state / "hit2").mkdir()        # one limited call only
    fake_agent(tmp_path, "claude", CLAUDE.format(state=state, reset_in=3600))
    batch = lines(tmp_path / "b.jsonl", {"id": "a", "agent": "claude", "prompt": "do a"})
    output = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--quota-wait", "60", "--output", str(output), "-C", str(workspace))
    assert proc.returncode == 1, proc.stderr
    line = results(output)["a"]
    assert line["status"] == "quota" and "later than --quota-wait (60 s) allows" in line["error"]
    assert line["rate_limit"]["reason"] == "usage limit" and line["rate_limit"]["resets_at"] > 0
    assert (state / "log").read_text().split()[0] == "limit"
    assert "ok" not in (state / "log").read_text()


def test_a_driver_killed_during_a_pause_leaves_no_line_for_the_waiting_tasks_and_a_resume_runs_them(
        tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    state = tmp_path / "state"
    state.mkdir()
    (state / "hit2").mkdir()        # one limited call, an hour from its reset
    fake_agent(tmp_path, "claude", CLAUDE.format(state=state, reset_in=3600))
    batch = lines(tmp_path / "b.jsonl", *({"id": i, "agent": "claude", "prompt": f"do {i}"} for i in "ab"))
    output = tmp_path / "out.jsonl"
    seen: list[str] = []
    with scv_process("batch", str(batch), "--parallel", "1", "--output", str(output), "-C", str(workspace)) as proc:
        reader = threading.Thread(target=lambda: seen.extend(proc.stderr), daemon=True)
        reader.start()
        wait_for(lambda: any("claude paused until" in line for line in seen), what="the pause")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader.join(30)     # the pipe ends with the driver's last process
    assert output.read_text() == ""                 # neither task has a line: both are still to run
    log = (state / "log").read_text().split()
    assert log[0] == "limit" and len(log) == 2      # b never started while claude was paused
    again = run_scv("batch", str(batch), "--output", str(output), "-C", str(workspace))
    assert again.returncode == 0, again.stderr
    assert {k: v["status"] for k, v in results(output).items()} == {"a": "completed", "b": "completed"}
