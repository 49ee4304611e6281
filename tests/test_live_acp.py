"""The ACP backend (workers/live/acp.py) driven directly, as the live worker runtime will drive
it, against a scripted ACP agent built on the official SDK (tests/acp_peer.py) run as a real
process: the handshake and declared capabilities, a conversation on one server, progress,
relayed permissions, refused client requests, cancel and timeout, an agent dying, sign-in and
protocol failures, full-permission modes, model and effort, and teardown."""

import os

import pytest

from scv.core.delegations import records
from tests.fakes import wait_for
from tests.live_fakes import harness, live, user  # noqa: F401 (fixtures)
from tests.live_fakes import acp_args, install_peer
from workers.live import acp
from workers.runtime import ToolFailure


def peer(user, tmp_path, *flags, name="claude-agent-acp"):
    return install_peer(user, tmp_path / "log", name, *flags)


def begin(harness, live, server, prompt, agent="claude", answer=None, **extra):
    args = acp_args(agent, server.executable, prompt, **extra)
    ctx = harness.context(args, answer=answer, timeout=extra.pop("timeout", 60.0))
    conversation = acp.start(args, ctx)
    live.append(conversation)
    return conversation, args, ctx


def test_a_conversation_runs_on_one_server_with_bounded_redacted_progress(user, tmp_path, harness, live, scv_home):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "hello")
    first = agent.turn(args, ctx)
    assert first.status == "completed" and first.agent == "claude"
    assert first.reply == "Hello from the peer.\nSecond line"
    assert first.usage == {"turns": 2, "input_tokens": 11, "output_tokens": 5, "cached_input_tokens": 2, "cost_usd": None, "cost_source": None}
    assert first.private.vendor_session == "peer-session-1" and first.exit_code is None
    # Throttled: the first line at once, then the newest held one, the last when the call ends
    # (what each update becomes is tests/test_live_acp_turn.py's).
    lines = ctx.lines
    assert lines[0] == "plan: write the fix" and lines[-1] == "Second line"
    assert not any("THOUGHT" in line or "TOOL OUTPUT" in line for line in lines)
    assert not any("sk-live" in line or "token=1" in line for line in lines)
    assert all(len(line) <= 200 for line in lines)
    # The handshake: protocol 1, no file-system or terminal capability, no MCP servers.
    init = server.events("initialize")[0]
    assert init["protocol_version"] == 1
    capabilities = init["client_capabilities"]
    assert capabilities["fs"] == {"readTextFile": False, "writeTextFile": False} and capabilities["terminal"] is False
    assert init["client_info"]["name"] == "scv"
    assert server.events("session/new")[0]["mcp_servers"] == []
    # Turn 2 goes to the same process and session.
    args2 = dict(args, prompt="count", turn=2)
    second = agent.turn(args2, harness.context(args2))
    pids = {e["pid"] for e in server.events("session/prompt")}
    assert len(pids) == 1 and second.reply == f"turn 2 in process {pids.pop()}"
    assert len(server.events("initialize")) == 1


def record_of(scv_home, handle="claude-a1b2c3"):
    return records.read(scv_home, handle)


@pytest.mark.parametrize("approve,option,exists", [(True, "allow", True), (False, "reject", False)])
def test_a_relayed_permission_request_goes_through_the_gate(user, tmp_path, harness, live, workspace, approve,
                                                             option, exists):
    server = peer(user, tmp_path)
    target = workspace / "notes.txt"
    agent, args, ctx = begin(harness, live, server, f"permission edit {target}", answer=lambda ask: approve)
    result = agent.turn(args, ctx)
    assert result.status == "completed" and result.reply == f"permission {option}"
    assert [(a.tool, a.risk, a.summary) for a in ctx.asked] == [("agent", "filesystem",
                                                                "[claude-1 acp] edit notes.txt (edit)")]
    assert server.events("permission")[-1]["option"] == option
    assert target.exists() is exists


@pytest.mark.parametrize("prompt,risk", [
    ("permission read {ws}/src/main.py", "read_only"),
    ("permission search {ws}/.env", "filesystem"),
    ("permission think {ws}/secrets/x", "filesystem"),
    ("permission delete {ws}/a.txt", "filesystem"),
    ("permission move {ws}/a.txt", "filesystem"),
    ("permission execute {ws}/a.sh", "process"),
    ("permission fetch {ws}/page", "network"),
    ("permission other {ws}/x", "delegate"),
])
def test_permission_risks_follow_scvs_own_tools(user, tmp_path, harness, live, workspace, prompt, risk):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, prompt.format(ws=workspace))
    agent.turn(args, ctx)
    assert [a.risk for a in ctx.asked] == [risk]
    assert server.events("permission")[-1]["option"] == "reject"       # no gate: rejected


@pytest.mark.parametrize("variant,approve,outcome,option", [
    ("always-only", True, "selected", "always"),
    ("always-only", False, "selected", "never"),
    ("none", True, "cancelled", None),
])
def test_answers_go_by_option_kind_never_by_id(user, tmp_path, harness, live, workspace, variant, approve, outcome,
                                               option):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, f"permission edit {workspace}/f {variant}",
                             answer=lambda ask: approve)
    try:
        agent.turn(args, ctx)
    except ToolFailure as failure:
        assert failure.fields["status"] == "cancelled"      # the peer ends a cancelled permission's turn
    event = server.events("permission")[-1]
    assert (event["outcome"], event["option"]) == (outcome, option)


def test_client_file_system_terminal_and_other_requests_are_method_not_found(user, tmp_path, harness, live):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "fs")
    assert agent.turn(args, ctx).reply == "fs done"
    assert [(e["method"], e["code"]) for e in server.events("client_request")] == [
        ("fs/read_text_file", -32601), ("terminal/create", -32601), ("weird/method", -32601)]


def test_unknown_updates_fields_and_notifications_are_ignored(user, tmp_path, harness, live):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "unknown")
    assert agent.turn(args, ctx).reply == "still here"


def test_cancel_sends_session_cancel_and_a_settled_agent_keeps_the_conversation(user, tmp_path, harness, live,
                                                                               scv_home):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "slow")
    wait_for(lambda: record_of(scv_home) is not None)
    ctx.cancel_in(0.3)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    fields = failure.value.fields
    assert fields["status"] == "cancelled" and not failure.value.private.conversation_ended
    assert "can continue" in str(failure.value)
    assert len(server.events("session/cancel")) == 1
    args2 = dict(args, prompt="count", turn=2)
    assert agent.turn(args2, harness.context(args2)).reply.startswith("turn 2 ")


def test_a_timed_out_turn_stays_resumable(user, tmp_path, harness, live):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "count")
    agent.turn(args, ctx)
    slow = dict(args, prompt="slow", turn=2)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(slow, harness.context(slow, timeout=1.0))
    assert failure.value.fields["status"] == "timeout" and not failure.value.private.conversation_ended
    assert len(server.events("session/cancel")) == 1
    again = dict(args, prompt="count", turn=3)
    assert agent.turn(again, harness.context(again)).reply.startswith("turn 3 ")


def test_an_agent_that_ignores_session_cancel_is_shut_down(user, tmp_path, harness, live, scv_home):
    server = peer(user, tmp_path, "--linger", "--escapee")
    agent, args, ctx = begin(harness, live, server, "ignore-cancel")
    ctx.cancel_in(0.3)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    fields = failure.value.fields
    assert fields["status"] == "cancelled" and failure.value.private.conversation_ended is True
    assert "did not end its turn within 2 s" in str(failure.value)
    assert record_of(scv_home) is None
    assert harness.tagged(f"s-test/claude-a1b2c3") == []         # the server and its setsid'd child
    assert agent.idle_fds() == [] and agent.on_idle() is False


def test_a_permission_pending_when_the_call_is_cancelled_is_answered_cancelled(user, tmp_path, harness, live,
                                                                               workspace):
    server = peer(user, tmp_path)

    def cancelled_while_asking(ask):
        ctx.cancel()            # the runtime's ask returns False when the call is cancelled meanwhile
        return False
    agent, args, ctx = begin(harness, live, server, f"permission edit {workspace}/f slow", answer=cancelled_while_asking)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert failure.value.fields["status"] == "cancelled"
    assert server.events("permission")[-1]["outcome"] == "cancelled"
    assert len(server.events("session/cancel")) == 1
    assert not (workspace / "f").exists()


def test_an_agent_dying_mid_turn_fails_the_call_with_its_stderr_and_ends_the_conversation(user, tmp_path, harness,
                                                                                         live, scv_home):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "die")
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    fields = failure.value.fields
    assert fields["status"] == "failed" and failure.value.private.available is False and failure.value.private.conversation_ended
    assert "exited with status 7" in str(failure.value) and "peer dying on purpose" in fields["stderr_tail"]
    assert fields["exit_code"] == 7 and fields["reply"] == "about to go\n"
    assert record_of(scv_home) is None
    with pytest.raises(ToolFailure) as again:
        agent.turn(dict(args, turn=2), harness.context(args))
    assert "its server exited" in str(again.value) and again.value.private.available is False


def test_sign_in_required_at_session_new_fails_with_the_login_hint(user, tmp_path, harness, live, scv_home):
    server = peer(user, tmp_path, "--signed-out-new")
    args = acp_args("codex", server.executable, "hello")
    with pytest.raises(ToolFailure) as failure:
        acp.start(args, harness.context(args))
    fields = failure.value.fields
    assert "Authentication required" in str(failure.value)
    assert "scv agents login codex" in fields["hint"] and failure.value.private.available is False
    assert failure.value.private.conversation_ended is True
    assert records.read(scv_home, "codex-a1b2c3") is None
    wait_for(lambda: not harness.tagged(f"s-test/codex-a1b2c3"))


def test_sign_in_required_at_the_prompt_fails_with_the_login_hint(user, tmp_path, harness, live):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "auth")
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert "scv agents login claude" in failure.value.fields["hint"]
    assert failure.value.private.available is False


def test_a_server_speaking_another_protocol_version_is_refused(user, tmp_path, harness, scv_home):
    server = peer(user, tmp_path, "--protocol", "2")
    args = acp_args("claude", server.executable, "hello")
    with pytest.raises(ToolFailure) as failure:
        acp.start(args, harness.context(args))
    assert "speaks ACP protocol version 2; SCV speaks version 1" in str(failure.value)
    assert failure.value.private.available is False
    assert record_of(scv_home) is None


@pytest.mark.parametrize("agent,modes,mode", [("claude", "claude", "bypassPermissions"),
                                              ("codex", "codex", "full-access")])
def test_full_permissions_select_the_agents_own_full_access_mode(user, tmp_path, harness, live, agent, modes, mode):
    server = peer(user, tmp_path, "--modes", modes)
    conversation, args, ctx = begin(harness, live, server, "config", agent=agent, full_permissions=True)
    assert conversation.turn(args, ctx).reply.endswith(f"mode={mode}")
    assert [e["mode_id"] for e in server.events("session/set_mode")] == [mode]
    env = server.agent.env()
    if agent == "codex":
        assert env["CODEX_CONFIG"] == '{"web_search":"live"}'
    else:
        assert "CODEX_CONFIG" not in env


@pytest.mark.parametrize("agent,modes,selected", [("claude", "claude-auto", ["default"]),
                                                   ("codex", "codex-agent", ["read-only"]),
                                                   ("claude", "claude", [])])
def test_without_full_permissions_a_session_is_moved_to_the_mode_that_asks(user, tmp_path, harness, live, agent,
                                                                          modes, selected):
    server = peer(user, tmp_path, "--modes", modes)
    conversation, args, ctx = begin(harness, live, server, "config", agent=agent)
    mode = selected[0] if selected else "default"
    assert conversation.turn(args, ctx).reply.endswith(f"mode={mode}")
    assert [e["mode_id"] for e in server.events("session/set_mode")] == selected


def test_claude_hiding_bypass_permissions_as_root_says_so_with_the_cli_hint(user, tmp_path, harness, scv_home):
    server = peer(user, tmp_path, "--modes", "claude-root")
    args = acp_args("claude", server.executable, "hello", full_permissions=True)
    with pytest.raises(ToolFailure) as failure:
        acp.start(args, harness.context(args))
    assert "hides bypassPermissions when it runs as root" in str(failure.value)
    assert "default, acceptEdits, plan, dontAsk" in str(failure.value)
    assert "refuses its full-permission switch when it runs as root" in failure.value.fields["hint"]
    assert record_of(scv_home) is None


def test_model_and_effort_become_config_options_at_any_turn(user, tmp_path, harness, live):
    server = peer(user, tmp_path, "--modes", "none")
    agent, args, ctx = begin(harness, live, server, "config", model="fast-model")
    assert agent.turn(args, ctx).reply == "model=fast-model effort=medium mode=None"
    args2 = dict(args, prompt="config", turn=2, model="fast-model", effort="high")
    assert agent.turn(args2, harness.context(args2)).reply == "model=fast-model effort=high mode=None"
    # An unchanged value is not sent again.
    assert [(e["config_id"], e["value"]) for e in server.events("session/set_config_option")] == [
        ("model", "fast-model"), ("reasoning_effort", "high")]


def test_a_value_the_agent_does_not_offer_fails_with_the_offered_list_and_keeps_the_conversation(
        user, tmp_path, harness, live):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "config", model="no-such-model")
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert "does not offer model 'no-such-model'" in str(failure.value)
    assert "it offers: default, fast-model, big-model" in str(failure.value)
    assert not failure.value.private.conversation_ended
    assert server.events("session/prompt") == []
    args2 = dict(args, turn=2, model=None)
    assert agent.turn(args2, harness.context(args2)).status == "completed"


@pytest.mark.parametrize("prompt,status,reply", [("refuse", "declined", "I can't help with that."),
                                                 ("max", "completed", "partial answer\n\n(stopped early: max_tokens)")])
def test_stop_reasons(user, tmp_path, harness, live, prompt, status, reply):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, prompt)
    result = agent.turn(args, ctx)
    assert (result.status, result.reply) == (status, reply)


def test_the_reply_is_bounded_on_a_character_boundary(user, tmp_path, harness, live):
    server = peer(user, tmp_path)
    args = acp_args("claude", server.executable, "flood 200000")
    ctx = harness.context(args, limit=5001)
    agent = acp.start(args, ctx)
    live.append(agent)
    result = agent.turn(args, ctx)
    assert result.truncated is True and len(result.reply.encode()) <= 5001
    assert set(result.reply) == {"é"}


def test_records_say_running_then_idle_and_teardown_stops_everything_tagged(user, tmp_path, harness, scv_home):
    server = peer(user, tmp_path, "--linger", "--escapee")
    args = acp_args("claude", server.executable, "count")
    ctx = harness.context(args)
    agent = acp.start(args, ctx)
    try:
        running = record_of(scv_home)
        assert running.conversation == "claude-1" and running.turn == 1 and running.idle_since_unix is None
        agent.turn(args, ctx)
        idle = record_of(scv_home)
        assert idle.idle_since_unix is not None and idle.pid == running.pid
        assert agent.idle_fds() and agent.on_idle() is True
        assert len(harness.tagged(f"s-test/claude-a1b2c3")) >= 2        # the server and its setsid'd child
    finally:
        agent.close()
    assert record_of(scv_home) is None
    assert harness.tagged(f"s-test/claude-a1b2c3") == []
    assert server.events("stdin closed")                            # stdin was closed before the stop


def test_a_server_killed_between_turns_is_collected_at_once(user, tmp_path, harness, live, scv_home):
    server = peer(user, tmp_path)
    agent, args, ctx = begin(harness, live, server, "count")
    agent.turn(args, ctx)
    os.kill(record_of(scv_home).pid, 9)
    wait_for(lambda: not agent.on_idle())
    assert record_of(scv_home) is None and agent.idle_fds() == []
    with pytest.raises(ToolFailure) as failure:
        agent.turn(dict(args, turn=2), harness.context(args))
    assert "its server exited (was killed by SIGKILL)" in str(failure.value)
    assert failure.value.private.conversation_ended is True


def test_scv_agents_ps_lists_it_idle_between_turns_and_kill_stops_it(user, tmp_path, harness, live, scv_home):
    import json

    from tests.conftest import run_scv, scv_env
    server = peer(user, tmp_path, "--linger")
    agent, args, ctx = begin(harness, live, server, "count")
    env = scv_env(SCV_HOME=str(scv_home))
    agent.turn(args, ctx)
    listed = json.loads(run_scv("agents", "ps", "--json", env=env).stdout)["delegations"]
    assert [(d["handle"], d["state"], d["conversation"], d["turn"]) for d in listed] == [
        ("claude-a1b2c3", "idle", "claude-1", 1)]
    killed = run_scv("agents", "kill", "claude-a1b2c3", env=env)
    assert killed.returncode == 0, killed.stderr
    wait_for(lambda: not agent.on_idle())
    assert record_of(scv_home) is None and harness.tagged(f"s-test/claude-a1b2c3") == []
