"""The ACP backend end to end: a real `scv server --stdio` (or `scv exec`) whose model (scripted,
or the fake OpenAI provider) calls the `agent` tool for `claude`, served by the scripted ACP peer
(tests/acp_peer.py) installed as `claude-agent-acp` in a fake user's ~/.local/bin: a conversation
on one server process, relayed permissions through the client's gate, cancel, `scv agents ps` and
`kill`, background jobs' relayed requests, orphan reconcile, and the registry's choice."""

import json
import subprocess
import sys

import pytest

from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import gone, kill_scv_tree, records_in, tagged_with
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import wait_for, write_script
from tests.live_fakes import FakeServer, completed_calls, install_peer


def peer(user_home, tmp_path, *flags) -> FakeServer:
    return install_peer(user_home, tmp_path / "peer-log", "claude-agent-acp", *flags)


def agent_call(call_id: str, prompt: str, **extra) -> dict:
    return {"id": call_id, "tool": "agent", "args": {"agent": "claude", "prompt": prompt, **extra}}


def server_pid(server: FakeServer) -> int:
    return wait_for(lambda: server.events("start"), what="the ACP server to start")[-1]["pid"]


def session(clients, tmp_path, workspace, *turns: dict, **start):
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", *turns)), cwd=workspace)
    client.start(cwd=str(workspace), **start)
    return client


def delegations() -> list[dict]:
    return json.loads(run_scv("agents", "ps", "--json").stdout)["delegations"]


def scv_status() -> dict:
    return json.loads(run_scv("status", "--json").stdout)


# --- a conversation on one server ------------------------------------------------------------

def test_two_turns_of_one_conversation_run_on_one_server_process(tmp_path, user_home, workspace, scv_home):
    server = peer(user_home, tmp_path)
    fake = FakeOpenAI()
    try:
        (scv_home / "config.toml").write_text(fake.config("chat"))
        fake.enqueue(Reply(calls=[("c1", "agent", json.dumps({"agent": "claude", "prompt": "count"}))]),
                     Reply(calls=[("c2", "agent", json.dumps({"prompt": "count", "session": "claude-1"}))]),
                     Reply(text="both done"))
        proc = run_scv("exec", "--auto-approve", "--json", "go", "-C", str(workspace),
                       env=scv_env(FAKE_OPENAI_KEY="sk-test"))
    finally:
        fake.close()
    assert proc.returncode == 0, proc.stderr
    seen = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    started = [e for e in seen if e["type"] == "tool.started"]
    # The approval summary of a live call: the server, kept for the conversation, relaying its requests.
    assert "over the Agent Client Protocol, kept for the conversation" in started[0]["summary"]
    assert "Continue conversation claude-1" in started[1]["summary"]
    first, second = [e["result"] for e in seen if e["type"] == "tool.completed"]
    pid = server_pid(server)
    no_tokens = {"turns": 1, "input_tokens": None, "cached_input_tokens": None, "output_tokens": None,
                 "cost_usd": None, "cost_source": None}       # the peer reports no usage; its turn counts
    assert first == {"agent": "claude", "status": "completed", "reply": f"turn 1 in process {pid}",
                     "usage": no_tokens, "exit_code": None, "stderr_tail": "", "truncated": False,
                     "session": "claude-1", "turn": 1}
    assert second["reply"] == f"turn 2 in process {pid}"
    assert (second["session"], second["turn"], second["status"]) == ("claude-1", 2, "completed")
    assert len(server.events("start")) == 1 and len(server.events("initialize")) == 1
    assert seen[-1]["reply"] == "both done"
    # The session ended: its conversation's server went with it, and so did its record.
    wait_for(lambda: gone([pid]), what="the ACP server to stop with the session")
    assert records_in(scv_home) == []


def test_model_and_effort_reach_the_server_and_an_unoffered_value_keeps_the_conversation(clients, tmp_path,
                                                                                         user_home, workspace):
    server = peer(user_home, tmp_path)
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", "config", model="fast-model", effort="high"),
                                agent_call("b", "config", session="claude-1", model="no-such-model"),
                                agent_call("c", "config", session="claude-1")]},
                     {"text": "{{a.reply}} | {{b.status}} | {{b.error}} | {{c.reply}} {{c.turn}}"}, auto_approve=True)
    client.request("turn.start", {"prompt": "go"})
    first, status, error, third = client.until("turn.completed").params["reply"].split(" | ")
    assert first == "model=fast-model effort=high mode=default"
    assert status == "failed" and "no-such-model" in error and "it offers: default, fast-model, big-model" in error
    assert third == "model=fast-model effort=high mode=default 3"
    assert len(server.events("start")) == 1


@pytest.mark.parametrize("modes, works", [("claude", True), ("claude-root", False)])
def test_full_permissions_select_the_agents_own_mode(clients, tmp_path, user_home, workspace, scv_home, modes, works):
    server = peer(user_home, tmp_path, "--modes", modes)
    (scv_home / "config.toml").write_text('[agents.claude]\npermissions = "full"\n')
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", "config")]}, {"text": "done"},
                     auto_approve=True)
    client.request("turn.start", {"prompt": "go"})
    client.until("turn.completed")
    assert "FULL PERMISSIONS" in client.notifications("tool.started")[0]["summary"]
    result = completed_calls(client)["a"]
    if works:
        assert [e["mode_id"] for e in server.events("session/set_mode")] == ["bypassPermissions"]
        assert result["reply"] == "model=default effort=medium mode=bypassPermissions"
    else:
        assert result["status"] == "failed" and "hides bypassPermissions when it runs as root" in result["error"]
        assert result["hint"] and "session" not in result and not delegations()


# --- relayed permission requests -------------------------------------------------------------

@pytest.mark.parametrize("approved", [True, False])
def test_a_relayed_permission_request_goes_through_the_clients_gate(clients, tmp_path, user_home, workspace,
                                                                      approved):
    server = peer(user_home, tmp_path)
    target = workspace / "made.txt"
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", f"permission edit {target}")]},
                     {"text": "{{a.status}}: {{a.reply}}"})
    client.request("turn.start", {"prompt": "edit it"})
    call = client.until("approval.requested")
    assert call.params["tool"] == "agent" and call.params["risk"] == "delegate"
    client.request("approval.resolve", {"id": call.params["id"], "approved": True})
    relayed = client.until("approval.requested")
    assert relayed.params["tool"] == "agent"
    assert relayed.params["summary"] == "[claude-1 acp] edit made.txt (edit)"
    assert relayed.params["risk"] == "filesystem" and relayed.params["workspace"] == str(workspace)
    client.request("approval.resolve", {"id": relayed.params["id"], "approved": approved})
    reply = client.until("turn.completed").params["reply"]
    [answer] = server.events("permission")
    if approved:
        assert answer["option"] == "allow" and target.read_text() == "written by the peer\n"
        assert reply == "completed: permission allow"
    else:
        assert answer["option"] == "reject" and not target.exists()
        assert reply == "completed: permission reject"


def test_an_auto_approving_client_is_not_asked_about_relayed_requests(clients, tmp_path, user_home, workspace):
    server = peer(user_home, tmp_path)
    target = workspace / "made.txt"
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", f"permission execute {target}")]},
                     {"text": "{{a.reply}}"}, auto_approve=True)
    client.request("turn.start", {"prompt": "run it"})
    assert client.until("turn.completed").params["reply"] == "permission allow"
    assert not client.notifications("approval.requested")
    assert server.events("permission")[0]["option"] == "allow"


# --- cancel ------------------------------------------------------------------------------------

def test_a_cancelled_turn_that_settles_keeps_the_conversation(clients, tmp_path, user_home, workspace):
    server = peer(user_home, tmp_path)
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", "slow")]},
                     {"calls": [agent_call("b", "count", session="claude-1")]}, {"text": "{{b.reply}}"},
                     auto_approve=True)
    client.request("turn.start", {"prompt": "slowly"})
    client.until("tool.progress", line="working slowly")
    assert client.request("turn.cancel") == {"cancelled": True}
    assert client.until("turn.failed").params["reason"] == "cancelled"
    assert len(server.events("session/cancel")) == 1
    first = completed_calls(client)["a"]
    assert first["status"] == "cancelled" and first["session"] == "claude-1" and first["turn"] == 1
    client.request("turn.start", {"prompt": "again"})
    pid = server_pid(server)
    assert client.until("turn.completed").params["reply"] == f"turn 2 in process {pid}"
    assert len(server.events("start")) == 1


def test_cancel_while_a_relayed_request_waits_answers_it_cancelled(clients, tmp_path, user_home, workspace):
    server = peer(user_home, tmp_path)
    target = workspace / "made.txt"
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", f"permission edit {target}")]},
                     {"calls": [agent_call("b", "count", session="claude-1")]}, {"text": "{{b.reply}}"})
    client.request("turn.start", {"prompt": "edit it"})
    call = client.until("approval.requested")
    client.request("approval.resolve", {"id": call.params["id"], "approved": True})
    relayed = client.until("approval.requested")
    assert relayed.params["summary"].startswith("[claude-1 acp]")
    client.request("turn.cancel")
    assert client.until("approval.resolved", id=relayed.params["id"]).params["approved"] is False
    assert client.until("turn.failed").params["reason"] == "cancelled"
    assert [e["outcome"] for e in server.events("permission")] == ["cancelled"] and not target.exists()
    assert completed_calls(client)["a"]["status"] == "cancelled"
    client.request("turn.start", {"prompt": "again"})
    call = client.until("approval.requested")
    client.request("approval.resolve", {"id": call.params["id"], "approved": True})
    assert client.until("turn.completed").params["reply"] == f"turn 2 in process {server_pid(server)}"


def test_a_cancelled_turn_the_agent_ignores_ends_the_conversation(clients, tmp_path, user_home, workspace):
    server = peer(user_home, tmp_path, "--linger", "--escapee")
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", "ignore-cancel")]},
                     {"calls": [agent_call("b", "count", session="claude-1")]}, {"text": "{{b.error}}"},
                     auto_approve=True)
    client.request("turn.start", {"prompt": "deaf"})
    client.until("tool.progress", line="not listening")
    pid = server_pid(server)
    [record] = delegations()
    assert len(tagged_with(record["handle"])) >= 2, "the server and the child it left in a session of its own"
    client.request("turn.cancel")
    assert client.until("turn.failed", timeout=60).params["reason"] == "cancelled"
    first = completed_calls(client)["a"]
    assert first["status"] == "cancelled" and "session" not in first
    assert "did not end its turn within 2 s of session/cancel" in first["error"]
    assert server.events("session/cancel")
    wait_for(lambda: gone([pid]) and not tagged_with(record["handle"]), what="the server and its child to stop")
    assert not delegations()
    client.request("turn.start", {"prompt": "again"})
    assert "is not a conversation of this session" in client.until("turn.completed").params["reply"]


def test_a_timed_out_turn_that_settles_stays_resumable(clients, tmp_path, user_home, workspace):
    server = peer(user_home, tmp_path)
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", "count"), agent_call("b", "slow", session="claude-1", timeout_seconds=1),
                                agent_call("c", "count", session="claude-1")]},
                     {"text": "{{b.status}} {{b.turn}} | {{c.reply}} {{c.turn}}"}, auto_approve=True)
    client.request("turn.start", {"prompt": "go"})
    reply = client.until("turn.completed", timeout=60).params["reply"]
    assert reply == f"timeout 2 | turn 3 in process {server_pid(server)} 3"
    assert len(server.events("session/cancel")) == 1 and len(server.events("start")) == 1


# --- the conversation's end stops its server ----------------------------------------------------

def test_a_forgotten_conversation_and_a_closed_session_stop_their_servers(clients, tmp_path, user_home, workspace,
                                                                          scv_home):
    server = peer(user_home, tmp_path, "--linger")     # like the real servers: EOF alone does not end it
    (scv_home / "config.toml").write_text("[agent]\nmax_conversations = 1\n")
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", "count")]}, {"text": "one"},
                     {"calls": [agent_call("b", "count")]}, {"text": "{{b.session}}"}, auto_approve=True)
    client.request("turn.start", {"prompt": "first"})
    client.until("turn.completed")
    first = server_pid(server)
    # A second conversation forgets the first (the limit is one): its server is stopped.
    client.request("turn.start", {"prompt": "second"})
    assert client.until("turn.completed").params["reply"] == "claude-2"
    second = [e["pid"] for e in server.events("start")][-1]
    assert second != first and gone([first])
    assert [r["pid"] for r in delegations()] == [second]
    client.request("session.close", {})
    wait_for(lambda: gone([second]) and not delegations(), what="the session's end to stop its server")
    assert client.proc.poll() is None


def test_an_idle_conversation_stops_its_server_when_its_time_is_up(clients, tmp_path, user_home, workspace,
                                                                   scv_home):
    server = peer(user_home, tmp_path, "--linger")
    (scv_home / "config.toml").write_text("[agent]\nconversation_idle_seconds = 1\n")
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", "count")]}, {"text": "one"},
                     {"calls": [agent_call("b", "count", session="claude-1")]}, {"text": "{{b.error}}"},
                     auto_approve=True)
    client.request("turn.start", {"prompt": "first"})
    client.until("turn.completed")
    pid = server_pid(server)
    # Nothing calls the agent again: the session's idle reaper forgets the conversation on time.
    wait_for(lambda: gone([pid]) and not delegations(), what="the idle conversation's server to stop")
    client.request("turn.start", {"prompt": "later"})
    assert "is not a conversation of this session" in client.until("turn.completed").params["reply"]


def test_a_server_that_dies_mid_turn_fails_the_call_and_ends_the_conversation(clients, tmp_path, user_home,
                                                                              workspace):
    server = peer(user_home, tmp_path)
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", "count"), agent_call("b", "die", session="claude-1"),
                                agent_call("c", "count", session="claude-1")]},
                     {"text": "{{c.error}}"}, auto_approve=True)
    client.request("turn.start", {"prompt": "go"})
    reply = client.until("turn.completed").params["reply"]
    died = completed_calls(client)["b"]
    assert died["status"] == "failed" and "exited with status 7 during the call" in died["error"]
    assert "peer dying on purpose" in died["stderr_tail"] and "session" not in died
    assert not any(key.startswith("_") for key in died)
    assert "is not a conversation of this session" in reply
    assert not delegations() and len(server.events("start")) == 1


def test_a_signed_out_server_fails_with_the_login_hint_and_offers_the_others(clients, tmp_path, user_home,
                                                                              workspace):
    from tests.agent_fakes import install
    peer(user_home, tmp_path, "--signed-out-new")
    install(user_home / ".local" / "bin", "codex", tmp_path / "codex-log")
    client = session(clients, tmp_path, workspace, {"calls": [agent_call("a", "count")]}, {"text": "done"},
                     auto_approve=True)
    client.request("turn.start", {"prompt": "go"})
    client.until("turn.completed")
    result = completed_calls(client)["a"]
    assert result["status"] == "failed" and "Authentication required" in result["error"]
    assert "scv agents login claude" in result["hint"] and "codex" in result["fallback"]
    assert "session" not in result and not delegations()


# --- tracking: scv agents ps and kill --------------------------------------------------------

def test_agents_ps_shows_the_live_agent_and_kill_between_turns_ends_its_conversation(clients, tmp_path, user_home,
                                                                                     workspace):
    server = peer(user_home, tmp_path)
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", "count")]}, {"text": "one"},
                     {"calls": [agent_call("b", "slow", session="claude-1")]},
                     {"calls": [agent_call("c", "count", session="claude-1"), agent_call("d", "count")]},
                     {"text": "{{c.status}} | {{c.error}} | {{d.status}} {{d.session}}"},
                     auto_approve=True)
    client.request("turn.start", {"prompt": "first"})
    client.until("turn.completed")
    [row] = delegations()
    pid = server_pid(server)
    assert (row["agent"], row["state"], row["pid"], row["conversation"], row["turn"]) == \
        ("claude", "idle", pid, "claude-1", 1)
    assert (scv_status()["running"], scv_status()["idle"]) == (0, 1)
    client.request("turn.start", {"prompt": "second"})
    client.until("tool.progress", line="working slowly")
    [row] = delegations()
    assert (row["state"], row["turn"]) == ("running", 2)
    assert (scv_status()["running"], scv_status()["idle"]) == (1, 0)
    client.request("turn.cancel")
    client.until("turn.failed")
    assert wait_for(lambda: [r["state"] for r in delegations()] == ["idle"], what="the agent to be idle again")
    killed = run_scv("agents", "kill", row["handle"], "--json")
    assert killed.returncode == 0, killed.stderr
    wait_for(lambda: gone([pid]) and not delegations(), what="the killed server to be collected")
    client.request("turn.start", {"prompt": "third"})
    reply = client.until("turn.completed").params["reply"]
    status, error, fresh = reply.split(" | ")
    assert status == "failed" and "conversation claude-1 cannot continue: its server exited" in error
    assert fresh == "completed claude-2"
    assert len(server.events("start")) == 2


def test_agents_kill_during_a_turn_cancels_it_and_ends_the_conversation(clients, tmp_path, user_home, workspace):
    server = peer(user_home, tmp_path, "--linger")
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", "slow"), agent_call("b", "count", session="claude-1")]},
                     {"text": "{{a.status}} | {{a.error}} | {{b.status}} | {{b.error}}"}, auto_approve=True)
    client.request("turn.start", {"prompt": "go"})
    client.until("tool.progress", line="working slowly")
    [row] = delegations()
    assert run_scv("agents", "kill", row["handle"]).returncode == 0
    status, error, _, refused = client.until("turn.completed", timeout=60).params["reply"].split(" | ")
    assert status == "cancelled" and "was stopped by scv agents kill" in error
    assert "is not a conversation of this session" in refused
    assert gone([server_pid(server)]) and not delegations()


# --- background jobs ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind, auto_approve, option", [("read", False, "allow"), ("edit", False, "reject"),
                                                        ("edit", True, "allow")])
def test_a_background_jobs_relayed_requests_follow_the_job_rules(clients, tmp_path, user_home, workspace, kind,
                                                                   auto_approve, option):
    # The policy's verdict (a read is read-only: it runs), else the client's declared
    # auto_approve, else denial: nobody is asked while a job runs.
    server = peer(user_home, tmp_path)
    target = workspace / "notes.txt"
    client = session(clients, tmp_path, workspace,
                     {"calls": [agent_call("a", f"permission {kind} {target}", background=True)]},
                     {"text": "started {{a.job}}"}, {"text": "reported"}, auto_approve=auto_approve)
    client.request("turn.start", {"prompt": "in the background"})
    if not auto_approve:
        call = client.until("approval.requested")
        assert call.params["tool"] == "agent"
        client.request("approval.resolve", {"id": call.params["id"], "approved": True})
    assert client.until("turn.completed", turn_id="turn-1").params["reply"] == "started job-1"
    report = client.first(lambda m: m.method == "turn.started" and m.params["turn_id"] != "turn-1", 60)
    assert report.params["origin"]["kind"] == "background"
    assert f"permission {option}" in report.params["prompt"]
    assert [e["option"] for e in server.events("permission")] == [option]
    assert len(client.notifications("approval.requested")) == (0 if auto_approve else 1)


# --- orphans -------------------------------------------------------------------------------------

def test_orphan_reconcile_reaps_a_live_server_whose_scv_was_killed(tmp_path, user_home, workspace, scv_home):
    server = peer(user_home, tmp_path, "--linger")
    script = write_script(tmp_path / "s.jsonl", {"calls": [agent_call("a", "slow")]}, {"text": "done"})
    proc = subprocess.Popen([sys.executable, "-m", "scv", "exec", "--script", str(script), "--auto-approve",
                             "-C", str(workspace)], env=scv_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: server.events("session/prompt"), what="the turn to reach the ACP server")
        pid = server_pid(server)
        [record] = records_in(scv_home)
        assert record["owner_pid"] == proc.pid and record["pid"] == pid
        assert pid in {p.pid for p in tagged_with(record["handle"])}
        kill_scv_tree(proc.pid, record["handle"])     # every SCV process at once, as a crash would
        proc.wait(10)
        assert not gone([pid]), "the lingering server outlives its SCV"
        listed = json.loads(run_scv("agents", "ps", "--all", "--json").stdout)["delegations"]
        assert [(row["handle"], row["state"]) for row in listed] == [(record["handle"], "orphan")]
        trivial = write_script(tmp_path / "t.jsonl", {"text": "hello"})
        assert run_scv("exec", "--script", str(trivial), "-C", str(workspace)).returncode == 0
        wait_for(lambda: gone([pid]), what="the orphaned server to be reaped")
        assert records_in(scv_home) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- the registry's choice -------------------------------------------------------------------

def _claude_cli(user_home, tmp_path):
    from tests.agent_fakes import install
    cli = install(user_home / ".local" / "bin", "claude", tmp_path / "cli-log")
    cli.replay("claude", "resume_turn1")
    return cli


@pytest.mark.parametrize("transport", ["auto", "resume", "acp"])
def test_the_registry_prefers_an_installed_acp_server(tmp_path, user_home, workspace, scv_home, transport):
    server = peer(user_home, tmp_path)
    cli = _claude_cli(user_home, tmp_path)
    (scv_home / "config.toml").write_text(f'[agents.claude]\ntransport = "{transport}"\n')
    script = write_script(tmp_path / "s.jsonl", {"calls": [agent_call("a", "count")]}, {"text": "done"})
    proc = run_scv("exec", "--script", str(script), "--auto-approve", "--json", "go", "-C", str(workspace))
    seen = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    started = next(e for e in seen if e["type"] == "tool.started")
    result = next(e for e in seen if e["type"] == "tool.completed")["result"]
    if transport == "resume":
        assert "Agent Client Protocol" not in started["summary"] and cli.calls() and not server.events("start")
        assert result["status"] == "completed"
    else:
        assert "over the Agent Client Protocol" in started["summary"] and not cli.calls()
        assert result["reply"] == f"turn 1 in process {server_pid(server)}"


def test_transport_acp_without_a_server_hides_the_agent(tmp_path, user_home, workspace, scv_home):
    from tests.agent_fakes import install
    cli = _claude_cli(user_home, tmp_path)
    install(user_home / ".local" / "bin", "codex", tmp_path / "codex-log")     # so the agent tool is offered
    (scv_home / "config.toml").write_text('[agents.claude]\ntransport = "acp"\n')
    script = write_script(tmp_path / "s.jsonl", {"calls": [agent_call("a", "count")]}, {"text": "{{a.error}}"})
    proc = run_scv("exec", "--script", str(script), "--auto-approve", "--json", "go", "-C", str(workspace))
    error = next(json.loads(line) for line in proc.stdout.splitlines() if '"tool.completed"' in line)["result"]
    assert error["error"] == 'agent "claude" is not offered in this session; choose one of: codex'
    assert not cli.calls()
