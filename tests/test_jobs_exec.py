"""Background jobs through `scv exec` (real processes, fake agent CLIs): a job that finishes while
the session is busy is reported after, in a turn the session starts itself; agent_wait and
agent_status show results so no report repeats them; agent_cancel stops an agent that ignores
TERM; the limit; closing the session stops running jobs."""

import json
import signal
import subprocess

from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import CODEX_THREAD, codex_reply_lines, conversation_markers, fake_agent, gone, \
    scv_patched
from tests.fakes import events, finish, scv_process, setup_fake_home, wait_for, write_script

AUTO = "--auto-approve"


def bg(call_id: str, prompt: str = "work") -> dict:
    return {"id": call_id, "tool": "agent", "args": {"agent": "codex", "prompt": prompt, "background": True}}


def completed(seen: list[dict], tool: str) -> list[dict]:
    return [e for e in seen if e["type"] == "tool.completed" and e["tool"] == tool]


def test_job_finishing_while_the_session_is_busy_is_reported_after(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", codex_reply_lines("the job's answer"))
    marker = conversation_markers(scv_home) / CODEX_THREAD
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg("b")]},
                          # Busy until the session has taken the job's result, and a little longer.
                          {"calls": [{"id": "w", "tool": "bash", "args": {
                              "command": f"while [ ! -e {marker} ]; do sleep 0.05; done; sleep 0.5"}}]},
                          {"text": "started {{b.job}}"},
                          {"text": "the job said hello"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    started = completed(seen, "agent")[0]["result"]
    assert started == {"job": "job-1", "agent": "codex", "status": "running", "background": True}
    kinds = [(e["type"], e.get("turn_id")) for e in seen if e["type"].startswith("turn.")]
    assert kinds == [("turn.started", "turn-1"), ("turn.completed", "turn-1"),
                     ("turn.started", "turn-2"), ("turn.completed", "turn-2")]
    report = [e for e in seen if e["type"] == "turn.started"][1]
    assert report["prompt"].startswith("[SCV background report]")
    assert "job-1: agent codex, conversation codex-1" in report["prompt"] and "the job's answer" in report["prompt"]
    origin = {"kind": "background", "jobs": [{"job": "job-1", "agent": "codex", "status": "completed"}]}
    assert report["origin"] == origin and seen[-1]["origin"] == origin
    assert seen[-1]["reply"] == "the job said hello"
    plain = run_scv("exec", "--script", str(script), AUTO, "-C", str(workspace))
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines() == ["started job-1", "the job said hello"]    # the report is printed too


def test_wait_and_status_show_results_so_no_report_follows(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    started = '{"type":"item.started","item":{"id":"c","type":"command_execution","command":"make test"}}'
    # The job runs until the script releases it, so it is certainly running when asked about.
    fake_agent(tmp_path, "codex", f"printf '%s\\n' '{started}'\ntouch agent-progressed\n"
               "while [ ! -e release ]; do sleep 0.05; done\n" + codex_reply_lines("waited for"))
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg("b")]},
                          {"calls": [{"id": "p", "tool": "bash", "args": {
                              "command": "while [ ! -e agent-progressed ]; do sleep 0.05; done; sleep 1"}}]},
                          {"calls": [{"id": "short", "tool": "agent_wait",
                                      "args": {"job": "job-1", "timeout_seconds": 1}}]},
                          {"calls": [{"id": "s", "tool": "agent_status", "args": {}}]},
                          {"calls": [{"id": "r", "tool": "bash", "args": {"command": "touch release"}}]},
                          {"calls": [{"id": "w", "tool": "agent_wait",
                                      "args": {"job": "job-1", "timeout_seconds": 30}}]},
                          {"calls": [{"id": "one", "tool": "agent_status", "args": {"job": "job-1"}},
                                     {"id": "nope", "tool": "agent_wait", "args": {"job": "job-7"}},
                                     {"id": "bad", "tool": "agent_status", "args": {"job": "7"}}]},
                          {"text": "done"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    waits = completed(seen, "agent_wait")
    timed_out = waits[0]["result"]          # the wait's timeout passed: running, with the latest progress
    assert waits[0]["ok"] and timed_out["status"] == "running" and timed_out["progress"] == "$ make test"
    assert "result" not in timed_out and timed_out["elapsed_seconds"] >= 1
    listing = completed(seen, "agent_status")[0]["result"]
    assert [(j["job"], j["status"]) for j in listing["jobs"]] == [("job-1", "running")]
    assert listing["jobs"][0]["progress"] == "$ make test"        # its latest progress line
    waited = waits[1]["result"]
    assert waited["job"] == "job-1" and waited["status"] == "completed" and waited["agent"] == "codex"
    assert waited["result"]["reply"] == "waited for" and waited["elapsed_seconds"] >= 2
    assert completed(seen, "agent_status")[1]["result"]["result"]["reply"] == "waited for"
    assert not waits[2]["ok"] and "no background job 'job-7'" in waits[2]["result"]["error"]
    assert "is not a job handle" in completed(seen, "agent_status")[2]["result"]["error"]
    assert len([e for e in seen if e["type"] == "turn.started"]) == 1       # seen results: no report turn


def test_cancel_stops_a_job_that_ignores_term(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    pids = tmp_path / "pids"
    fake_agent(tmp_path, "codex", f"trap '' TERM\nsleep 300 &\necho $! >> {pids}\nsetsid sleep 300 &\n"
                                  f"echo $! >> {pids}\necho $$ >> {pids}\ntouch agent-started\n"
                                  "while true; do sleep 0.1; done\n")
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg("b")]},
                          {"calls": [{"id": "w", "tool": "bash", "args": {
                              "command": "while [ ! -e agent-started ]; do sleep 0.05; done"}}]},
                          {"calls": [{"id": "c", "tool": "agent_cancel", "args": {"job": "job-1"}}]},
                          {"calls": [{"id": "again", "tool": "agent_cancel", "args": {"job": "job-1"}}]},
                          {"text": "stopped"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    first, second = [e["result"] for e in completed(seen, "agent_cancel")]
    assert first["job"] == "job-1" and first["status"] == "cancelled" and "note" not in first
    assert first["result"]["status"] == "cancelled"
    assert second["status"] == "cancelled" and "had already finished" in second["note"]
    assert len([e for e in seen if e["type"] == "turn.started"]) == 1       # the model asked: no report
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 3
    wait_for(lambda: gone(started))


def test_the_limit_refuses_a_start_before_approval(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    (scv_home / "config.toml").write_text("[agent]\nmax_background = 1\n")
    fake_agent(tmp_path, "codex", "sleep 300\n")
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg("one"), bg("two")]},
                          {"calls": [{"id": "c", "tool": "agent_cancel", "args": {"job": "job-1"}}]},
                          {"text": "ok"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    one, two = completed(seen, "agent")
    assert one["result"]["job"] == "job-1"
    assert two["result"]["refused"] and "agent.max_background" in two["result"]["error"]
    assert "agent_cancel" in two["result"]["error"]
    tools = [e for e in seen if e["type"] == "tool.started" and e["tool"] == "agent"]
    assert tools[1]["summary"] is None                  # refused before any approval


def test_jobs_off_hides_the_tools(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    (scv_home / "config.toml").write_text("[agent]\nmax_background = 0\n")
    fake_agent(tmp_path, "codex", "exit 0\n")
    listed = run_scv("tools", "--json", "-C", str(workspace))
    tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
    assert "agent" in tools and "background" not in tools["agent"]["schema"]["properties"]
    assert not {"agent_wait", "agent_status", "agent_cancel"} & set(tools)


def test_five_jobs_are_reported_four_per_turn(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    (scv_home / "config.toml").write_text("[agent]\nmax_background = 5\n")
    fake_agent(tmp_path, "codex", codex_reply_lines("fine", thread="thread-$$"))
    markers = conversation_markers(scv_home)
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg(f"b{i}") for i in range(5)]},
                          # Busy until the session has all five results, so one report turn takes four.
                          {"calls": [{"id": "w", "tool": "bash", "args": {
                              "command": f"while [ $(ls {markers} 2>/dev/null | grep -c '^thread-') -lt 5 ]; do "
                                         "sleep 0.05; done; sleep 0.5"}}]},
                          {"text": "five started"}, {"text": "four reported"}, {"text": "one reported"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    origins = [e["origin"] for e in events(proc.stdout) if e["type"] == "turn.started" and "origin" in e]
    assert [len(o["jobs"]) for o in origins] == [4, 1]
    assert sorted(j["job"] for o in origins for j in o["jobs"]) == [f"job-{i}" for i in range(1, 6)]


def test_sigterm_closes_the_session_and_stops_running_jobs(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    pids = tmp_path / "pids"
    fake_agent(tmp_path, "codex", f"echo $$ >> {pids}\nsetsid sleep 300 &\necho $! >> {pids}\nsleep 300\n")
    script = write_script(tmp_path / "s.jsonl", {"calls": [bg("b")]}, {"text": "started"})
    with scv_process("exec", "--script", str(script), AUTO, "-C", str(workspace)) as proc:
        wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2)
        assert proc.poll() is None          # still open: its job has not been reported
        out, err = finish(proc, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert "started" in out
    wait_for(lambda: gone([int(p) for p in pids.read_text().split()]))


def test_scv_tool_has_no_session_to_hold_a_job(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    calls = fake_agent(tmp_path, "codex", "exit 0\n")
    proc = run_scv("tool", "agent", '{"agent":"codex","prompt":"x","background":true}', "--auto-approve",
                   "-C", str(workspace))
    assert proc.returncode == 2 and "background jobs belong to a session" in proc.stderr
    assert calls.calls() == []          # refused: no job, no agent


def test_status_of_many_jobs_shares_the_output_limit(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    (scv_home / "config.toml").write_text("[tools]\noutput_limit_bytes = 2048\n")
    fake_agent(tmp_path, "codex", codex_reply_lines("é" * 1500))       # 3000 bytes, cut to 2048 by the agent tool
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg("a"), bg("b")]},
                          {"calls": [{"id": "w1", "tool": "agent_wait", "args": {"job": "job-1"}},
                                     {"id": "w2", "tool": "agent_wait", "args": {"job": "job-2"}}]},
                          {"calls": [{"id": "s", "tool": "agent_status", "args": {}}]},
                          {"text": "ok"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    whole = completed(seen, "agent_wait")[0]["result"]["result"]["reply"]
    assert len(whole.encode()) == 2048
    listed = completed(seen, "agent_status")[0]["result"]["jobs"]
    assert [len(job["result"]["reply"].encode()) for job in listed] == [1024, 1024]
    assert all(job["result"]["truncated"] and job["result"]["reply"] == "é" * 512 for job in listed)


def test_wait_defaults_to_the_agent_timeout_within_the_ceiling(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    (scv_home / "config.toml").write_text("[tools]\nagent_timeout_seconds = 5000\nmax_timeout_seconds = 4000\n")
    fake_agent(tmp_path, "codex", codex_reply_lines("quick"))
    listed = run_scv("tools", "--json", "-C", str(workspace))
    schema = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}["agent_wait"]["schema"]
    limits = [c.get("maximum") for c in schema["properties"]["timeout_seconds"]["anyOf"] if c["type"] == "integer"]
    assert limits == [4000]
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [bg("b")]},
                          {"calls": [{"id": "over", "tool": "agent_wait", "args": {"job": "job-1",
                                                                                  "timeout_seconds": 4001}},
                                     {"id": "w", "tool": "agent_wait", "args": {"job": "job-1"}}]},
                          {"text": "ok"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    over, waited = completed(seen, "agent_wait")
    assert over["result"]["refused"] and "over the ceiling of 4000 seconds" in over["result"]["error"]
    summaries = [e["summary"] for e in seen if e["type"] == "tool.started" and e["tool"] == "agent_wait"]
    assert summaries[1] == "wait up to 4000 s for background job job-1"
    assert waited["ok"] and waited["result"]["status"] == "completed"
    assert waited["result"]["result"]["reply"] == "quick"


def test_a_background_call_is_refused_when_jobs_are_off(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    (scv_home / "config.toml").write_text("[agent]\nmax_background = 0\n")
    calls = fake_agent(tmp_path, "codex", "exit 0\n")
    script = write_script(tmp_path / "s.jsonl", {"calls": [bg("b")]}, {"text": "ok"})
    proc = run_scv("exec", "--script", str(script), "--json", AUTO, "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    refused = completed(events(proc.stdout), "agent")[0]["result"]
    assert refused["refused"] and "background jobs are off (agent.max_background = 0)" in refused["error"]
    assert calls.calls() == []          # no job, no agent


# A job continuing a conversation begins its turn only once a third conversation was started (by
# the next job): the order in which that start used to evict the reserved conversation.
CONTINUE_AFTER_THIRD_START = """import threading
from scv.agents.conversations import Conversations
starts, third = [], threading.Event()
start, begin_turn = Conversations.start, Conversations.begin_turn
def counted(self, agent):
    conversation = start(self, agent)
    starts.append(conversation.handle)
    if len(starts) >= 3:
        third.set()
    return conversation
def after_third(self, conversation):
    if conversation.turns:
        third.wait(30)
    return begin_turn(self, conversation)
Conversations.start, Conversations.begin_turn = counted, after_third
"""


def test_a_job_continuing_a_conversation_keeps_it_while_another_job_starts_one(tmp_path, monkeypatch, workspace,
                                                                               scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", codex_reply_lines("answer", thread="thread-$$"))
    (scv_home / "config.toml").write_text("[agent]\nmax_conversations = 2\n")
    call = lambda i, **extra: {"id": i, "tool": "agent", "args": {"agent": "codex", "prompt": i, **extra}}
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [call("one"), call("two")]},        # codex-1 then codex-2, both idle
                          {"calls": [call("again", session="codex-1", background=True),
                                     call("new", background=True)]},
                          {"calls": [{"id": f"w{n}", "tool": "agent_wait", "args": {"job": f"job-{n}"}}
                                     for n in (1, 2)]},
                          {"text": "done"})
    proc = subprocess.run(scv_patched(CONTINUE_AFTER_THIRD_START, "exec", "--script", str(script), "--json", AUTO,
                                      "-C", str(workspace)),
                          capture_output=True, text=True, timeout=120, env=scv_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    waits = [e["result"] for e in completed(events(proc.stdout), "agent_wait")]
    assert [(w["job"], w["status"], w["result"].get("session")) for w in waits] == \
        [("job-1", "completed", "codex-1"), ("job-2", "completed", "codex-3")], waits
