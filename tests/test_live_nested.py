"""The nested SCV backend (workers/live/nested_scv.py) driven directly, as the live worker runtime
will drive it, against a bash stand-in for `scv server --stdio` (tests/live_fakes.py): a
conversation on one child, progress, approval relay (approved, denied, without a gate), cancel and
timeout relay including a child that ignores turn.cancel, a child dying mid-turn, its own
background jobs and report turns between calls, and teardown. A real nested `scv` runs at the end."""

import json
import threading

import pytest

from scv.core.delegations import records
from tests.fakes import wait_for
from tests.live_fakes import harness, live, user  # noqa: F401 (fixtures)
from tests.live_fakes import acp_args, emit, install_nested, nested_requests
from workers.live import nested_scv
from workers.runtime import ToolFailure

HANDLE = "scv-a1b2c3"


def turns(*steps: str, after: str = "") -> str:
    """A stand-in that answers every turn.start with `steps` (bash lines; $T is the turn id)."""
    body = "\n".join(steps)
    return f"""handshake
n=0
while next; do
  case "$METHOD" in
    turn.start) n=$((n+1)); T=turn-$n; reply "{{\\"turn_id\\":\\"$T\\"}}"
{body}
      ;;
    turn.cancel) reply '{{"cancelled":true}}'
{after}
      ;;
    approval.resolve) reply '{{}}' ;;
  esac
done
"""


def completed(reply="done", **usage):
    return emit("turn.completed", turn_id="@T@", reply=reply,
                usage=usage or {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5})


def begin(harness, live, server, prompt="go", answer=None, timeout=60.0, **extra):
    args = acp_args("scv", server.executable, prompt, **extra)
    args["argv"] = [str(server.executable), "server", "--stdio"]
    args["delegation"] = HANDLE
    ctx = harness.context(args, answer=answer, timeout=timeout)
    conversation = nested_scv.start(args, ctx)
    live.append(conversation)
    return conversation, args, ctx


def again(harness, args, prompt, turn, **options):
    later = dict(args, prompt=prompt, turn=turn)
    keep_model = options.pop("keep_model", False)
    if args.get("model") and turn > 1 and not keep_model:
        later.pop("model")
    return later, harness.context(later, **options)


def test_a_conversation_runs_on_one_child_in_the_private_home(user, tmp_path, harness, live, scv_home, workspace):
    server = install_nested(user, tmp_path / "log", turns(
        emit("turn.started", turn_id="@T@", prompt="p"),
        emit("assistant.delta", turn_id="@T@", text="Looking at"),
        emit("assistant.delta", turn_id="@T@", text=" it\nnext"),
        emit("assistant.text", turn_id="@T@", text="Looking at it\nnext"),
        emit("tool.started", turn_id="@T@", call_id="c1", tool="bash", arguments='{"command":"make test"}',
             risk="process", summary="run make test"),
        emit("tool.completed", turn_id="@T@", call_id="c1", tool="bash", ok=False, result={"output": "RAW OUTPUT"}),
        completed("reply from @PID@ in @T@")))
    agent, args, ctx = begin(harness, live, server, model="nested-model")
    first = agent.turn(args, ctx)
    assert first.agent == "scv" and first.status == "completed"
    assert first.reply.startswith("reply from ") and first.reply.endswith("in turn-1")
    assert first.usage == {"turns": 1, "input_tokens": 3, "output_tokens": 2, "cached_input_tokens": None, "cost_usd": None, "cost_source": None}
    assert first.private.vendor_session == "session-standin"
    assert ctx.lines[0] == "Looking at it" and ctx.lines[-1] == "bash failed"
    assert not any("RAW OUTPUT" in line for line in ctx.lines)
    start = nested_requests(server)[1]
    assert start["method"] == "session.start"
    assert start["params"] == {"cwd": str(workspace), "delegation_depth": 1, "model": "nested-model"}
    assert nested_requests(server)[0]["params"] == {"protocol_version": 3}
    env = server.agent.env()
    private = scv_home / "agents" / "scv"
    assert env["HOME"] == str(private) and env["SCV_HOME"] == str(private)
    assert env["SCV_DELEGATION_DEPTH"] == "1" and env["SCV_PARENT"].endswith(f"/s-test/{HANDLE}")
    later, ctx2 = again(harness, args, "more", 2)
    second = agent.turn(later, ctx2)
    assert second.reply == first.reply.replace("turn-1", "turn-2")      # the same child
    assert [r["method"] for r in nested_requests(server)].count("session.start") == 1


def test_progress_shows_tool_starts_and_their_own_lines_never_output(user, tmp_path, harness, live):
    server = install_nested(user, tmp_path / "log", turns(
        emit("tool.started", turn_id="@T@", call_id="c1", tool="read", arguments='{"path":"a"}', risk="read_only",
             summary="read a"),
        emit("tool.progress", turn_id="@T@", call_id="c1", line="halfway through"),
        completed()))
    agent, args, ctx = begin(harness, live, server)
    agent.turn(args, ctx)
    assert ctx.lines[0] == "read read a"
    assert ctx.lines[-1] in ("halfway through", "read done")


@pytest.mark.parametrize("answer,approved", [(lambda ask: True, "true"), (lambda ask: False, "false"),
                                             (None, "false")])
def test_approval_requests_go_through_the_callers_gate_with_the_depth_prefix(user, tmp_path, harness, live,
                                                                            answer, approved):
    server = install_nested(user, tmp_path / "log", turns(
        emit("approval.requested", turn_id="@T@", id="approval-1", tool="write", risk="filesystem",
             summary="create notes.txt (5 bytes)"),
        "next; reply '{}'", 'R=$(sed -n \'s/.*"approved":\\([a-z]*\\).*/\\1/p\' <<<"$LINE")',
        emit("turn.completed", turn_id="@T@", reply="approved=@R@", usage={})))
    agent, args, ctx = begin(harness, live, server, answer=answer)
    result = agent.turn(args, ctx)
    assert [(a.tool, a.risk, a.summary) for a in ctx.asked] == [
        ("write", "filesystem", "[scv-1 depth 1] create notes.txt (5 bytes)")]
    resolve = [r for r in nested_requests(server) if r["method"] == "approval.resolve"]
    assert resolve[0]["params"] == {"id": "approval-1", "approved": approved == "true"}
    assert result.reply == f"approved={approved}"


def test_cancel_sends_turn_cancel_and_a_settled_child_keeps_the_conversation(user, tmp_path, harness, live):
    server = install_nested(user, tmp_path / "log", turns(
        emit("turn.started", turn_id="@T@", prompt="p"),
        'if [ "$n" = 2 ]; then ' + completed("second") + "; fi",
        after=emit("turn.failed", turn_id="@T@", reason="cancelled", error="the turn was cancelled", usage={})))
    agent, args, ctx = begin(harness, live, server)
    ctx.cancel_in(0.3)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert failure.value.fields["status"] == "cancelled" and not failure.value.private.conversation_ended
    assert [r["method"] for r in nested_requests(server)].count("turn.cancel") == 1
    later, ctx2 = again(harness, args, "more", 2)
    assert agent.turn(later, ctx2).reply == "second"


def test_a_timed_out_turn_relays_turn_cancel_and_stays_resumable(user, tmp_path, harness, live):
    server = install_nested(user, tmp_path / "log", turns(
        'if [ "$n" != 2 ]; then ' + completed("quick") + "; fi",
        after=emit("turn.failed", turn_id="@T@", reason="cancelled", error="the turn was cancelled", usage={})))
    agent, args, ctx = begin(harness, live, server)
    agent.turn(args, ctx)
    slow, ctx2 = again(harness, args, "slow", 2, timeout=1.0)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(slow, ctx2)
    assert failure.value.fields["status"] == "timeout" and not failure.value.private.conversation_ended
    third, ctx3 = again(harness, args, "again", 3)
    assert agent.turn(third, ctx3).reply == "quick"


def gated_start(gate) -> str:
    """A stand-in that answers its first turn.start only once `gate` exists, then settles on turn.cancel."""
    return f"""handshake
n=0
while next; do
  case "$METHOD" in
    turn.start) n=$((n+1)); T=turn-$n
      if [ "$n" = 1 ]; then while [ ! -e {gate} ]; do sleep 0.02; done; fi
      reply "{{\\"turn_id\\":\\"$T\\"}}"
      if [ "$n" != 1 ]; then {completed("second")}; fi ;;
    turn.cancel) reply '{{"cancelled":true}}'
      {emit("turn.failed", turn_id="@T@", reason="cancelled", error="the turn was cancelled", usage={})} ;;
  esac
done
"""


@pytest.mark.parametrize("answers", [True, False])
def test_a_cancel_before_turn_start_is_answered_still_cancels_that_turn(user, tmp_path, harness, live, answers):
    """The cancel overtakes the answer to turn.start: the turn may exist, so its answer is awaited
    (then turn.cancel settles it and the conversation goes on), or, with no answer within the
    settle time, the child is shut down and the conversation ends."""
    gate = tmp_path / "answer-turn-start"
    server = install_nested(user, tmp_path / "log", gated_start(gate))
    args = acp_args("scv", server.executable, "go")
    args["argv"], args["delegation"] = [str(server.executable), "server", "--stdio"], HANDLE
    ctx = harness.context(args)

    def cancel_while_the_start_waits():
        wait_for(lambda: any(r["method"] == "turn.start" for r in nested_requests(server)), what="turn.start")
        ctx.cancel()
        if answers:
            gate.touch()
    conversation = nested_scv.start(args, ctx)
    live.append(conversation)
    helper = threading.Thread(target=cancel_while_the_start_waits, daemon=True)
    helper.start()
    with pytest.raises(ToolFailure) as failure:
        conversation.turn(args, ctx)
    helper.join()
    fields = failure.value.fields
    assert fields["status"] == "cancelled"
    if answers:
        assert not failure.value.private.conversation_ended and "the conversation can continue" in str(failure.value)
        assert [r["method"] for r in nested_requests(server)].count("turn.cancel") == 1
        later, ctx2 = again(harness, args, "more", 2)
        assert conversation.turn(later, ctx2).reply == "second"
    else:
        assert failure.value.private.conversation_ended is True and "did not answer turn.start" in str(failure.value)
        assert not conversation.proc.alive


def test_a_child_that_ignores_turn_cancel_is_shut_down(user, tmp_path, harness, live, scv_home):
    server = install_nested(user, tmp_path / "log", turns("setsid sleep 300 </dev/null >/dev/null 2>&1 &",
                                                          after="sleep 300"))
    agent, args, ctx = begin(harness, live, server)
    ctx.cancel_in(0.3)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert failure.value.fields["status"] == "cancelled" and failure.value.private.conversation_ended is True
    assert "did not end within 2 s of turn.cancel" in str(failure.value)
    assert records.read(scv_home, HANDLE) is None
    assert harness.tagged(f"s-test/{HANDLE}") == []
    assert agent.on_idle() is False


def test_a_child_dying_mid_turn_fails_with_its_stderr_tail_and_ends_the_conversation(user, tmp_path, harness, live,
                                                                                    scv_home):
    server = install_nested(user, tmp_path / "log", turns("echo 'nested server broke' >&2", "exit 4"))
    agent, args, ctx = begin(harness, live, server)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    fields = failure.value.fields
    assert fields["status"] == "failed" and failure.value.private.conversation_ended and failure.value.private.available is False
    assert "exited with status 4" in str(failure.value) and "nested server broke" in fields["stderr_tail"]
    assert records.read(scv_home, HANDLE) is None
    later, ctx2 = again(harness, args, "more", 2)
    with pytest.raises(ToolFailure) as again_failure:
        agent.turn(later, ctx2)
    assert "its server exited" in str(again_failure.value)


def test_a_failed_nested_turn_carries_its_reason(user, tmp_path, harness, live):
    server = install_nested(user, tmp_path / "log", turns(
        emit("turn.failed", turn_id="@T@", reason="provider", error="the endpoint answered 401 Unauthorized",
             usage={})))
    agent, args, ctx = begin(harness, live, server)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert "(provider)" in str(failure.value) and "401" in str(failure.value)
    assert failure.value.private.available is False and "scv agents login scv" in failure.value.fields["hint"]


def test_an_older_child_that_omits_fields_is_followed_and_unreadable_events_are_ignored(user, tmp_path, harness,
                                                                                       live):
    """The rule of scv/core/events.py's read_event, through the client: an omitted field reads as
    empty (no risk or summary, a turn's end without reply or usage), a missing turn id or a field
    of the wrong type makes the event unreadable, and it is ignored."""
    server = install_nested(user, tmp_path / "log", turns(
        emit("tool.started", turn_id="@T@", call_id="c1", tool="read", arguments='{"path":"a"}'),
        emit("tool.progress", call_id="c1", line="no turn id"),
        emit("tool.progress", turn_id="@T@", call_id="c1", line=7),
        emit("tool.progress", turn_id="@T@", call_id="c1", line="read half of a"),
        emit("assistant.delta", turn_id="@T@", text="streamed reply"),
        emit("turn.failed", turn_id=42, reason="provider", error="an unreadable end is not this turn's end"),
        emit("turn.completed", turn_id="@T@")))
    agent, args, ctx = begin(harness, live, server)
    result = agent.turn(args, ctx)
    assert result.status == "completed" and result.reply == "streamed reply"
    assert ctx.lines[0] == "read"
    assert "no turn id" not in ctx.lines and "7" not in ctx.lines
    assert agent.wire.ignored == 3


def test_model_after_the_first_call_and_any_effort_are_refused(user, tmp_path, harness, live):
    server = install_nested(user, tmp_path / "log", turns(completed()))
    agent, args, ctx = begin(harness, live, server)
    agent.turn(args, ctx)
    for extra, sentence in (({"model": "m2"}, "takes model only when its conversation starts"),
                            ({"effort": "high"}, "does not take effort")):
        later, ctx2 = again(harness, dict(args, **extra), "x", 2, keep_model=True)
        with pytest.raises(ToolFailure) as failure:
            agent.turn(later, ctx2)
        assert sentence in str(failure.value)


def test_its_own_background_jobs_are_counted_and_its_report_turns_approvals_denied(user, tmp_path, harness, live,
                                                                                  scv_home):
    gate = tmp_path / "report-now"
    report = "\n".join([
        f"while [ ! -e {gate} ]; do sleep 0.05; done", "T=turn-report",
        emit("turn.started", turn_id="@T@", prompt="[SCV background report]",
             origin={"kind": "background", "jobs": [{"job": "job-1", "agent": "codex", "status": "completed"}]}),
        emit("approval.requested", turn_id="@T@", id="approval-9", tool="bash", risk="process", summary="rm -rf x"),
        "next; reply '{}'",
        emit("turn.completed", turn_id="@T@", reply="reported", usage={}),
    ])
    server = install_nested(user, tmp_path / "log", turns(
        emit("tool.completed", turn_id="@T@", call_id="c1", tool="agent", ok=True,
             result={"job": "job-1", "status": "running", "background": True},
             jobs=[{"job": "job-1", "status": "running"}]),
        completed("started job-1"), report))
    agent, args, ctx = begin(harness, live, server)
    assert agent.turn(args, ctx).reply == "started job-1"
    record = records.read(scv_home, HANDLE)
    assert record.background_jobs == 1 and record.idle_since_unix is not None
    gate.touch()
    wait_for(lambda: agent.on_idle() and records.read(scv_home, HANDLE).background_jobs is None)
    resolve = [r for r in nested_requests(server) if r["method"] == "approval.resolve"]
    assert resolve[-1]["params"] == {"id": "approval-9", "approved": False}
    assert ctx.asked == []


def test_a_job_whose_result_a_later_call_showed_stops_counting(user, tmp_path, harness, live, scv_home):
    server = install_nested(user, tmp_path / "log", turns(
        'if [ "$n" = 1 ]; then ' + emit("tool.completed", turn_id="@T@", call_id="c1", tool="agent_codex", ok=True,
                                         result={}, jobs=[{"job": "job-1", "status": "running"}]) + "; else "
        + emit("tool.completed", turn_id="@T@", call_id="c2", tool="agent_wait", ok=True, result={},
               jobs=[{"job": "job-1", "status": "completed"}]) + "; fi",
        completed()))
    agent, args, ctx = begin(harness, live, server)
    agent.turn(args, ctx)
    assert records.read(scv_home, HANDLE).background_jobs == 1
    later, ctx2 = again(harness, args, "wait for it", 2)
    agent.turn(later, ctx2)
    assert records.read(scv_home, HANDLE).background_jobs is None


def test_teardown_closes_stdin_and_the_child_exits_on_eof(user, tmp_path, harness, scv_home):
    server = install_nested(user, tmp_path / "log", f"on_eof() {{ echo eof > {tmp_path / 'eof'}; }}\n"
                            + turns(completed()))
    args = acp_args("scv", server.executable, "go")
    args["argv"], args["delegation"] = [str(server.executable), "server", "--stdio"], HANDLE
    ctx = harness.context(args)
    agent = nested_scv.start(args, ctx)
    agent.turn(args, ctx)
    agent.close()
    assert (tmp_path / "eof").read_text() == "eof\n"        # it saw EOF and ended by itself
    assert records.read(scv_home, HANDLE) is None and harness.tagged(f"s-test/{HANDLE}") == []


def test_a_real_nested_scv_against_the_fake_provider(user, tmp_path, harness, live, scv_home, workspace,
                                                     monkeypatch):
    """The running SCV nests itself (`python -m scv server --stdio`) with the provider that
    `scv agents import scv` copied; its bash call's approval comes back through the caller's gate."""
    import sys

    from tests.conftest import ROOT, run_scv, scv_env
    from tests.fake_openai import FakeOpenAI, Reply
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    fake = FakeOpenAI()
    try:
        (scv_home / "config.toml").write_text(fake.config())
        imported = run_scv("agents", "import", "scv", env=scv_env(SCV_HOME=str(scv_home), FAKE_OPENAI_KEY="sk-test"))
        assert imported.returncode == 0, imported.stderr
        fake.enqueue(Reply(calls=[("c1", "bash", json.dumps({"command": "echo nested > made-by-nested.txt"}))]),
                     Reply(text="the nested SCV made the file"), Reply(text="second turn"))
        args = acp_args("scv", sys.executable, "make the file")
        args["argv"], args["delegation"] = [sys.executable, "-m", "scv", "server", "--stdio"], HANDLE
        ctx = harness.context(args, answer=lambda ask: True, timeout=120)
        agent = nested_scv.start(args, ctx)
        live.append(agent)
        first = agent.turn(args, ctx)
        assert first.status == "completed" and first.reply == "the nested SCV made the file"
        assert (workspace / "made-by-nested.txt").read_text() == "nested\n"
        assert [(a.tool, a.risk) for a in ctx.asked] == [("bash", "process")]
        assert ctx.asked[0].summary.startswith("[scv-1 depth 1] ")
        assert any(line.startswith("bash echo nested") for line in ctx.lines) or ctx.lines[-1] == "bash done"
        later, ctx2 = again(harness, args, "and again", 2)
        assert agent.turn(later, ctx2).reply == "second turn"
        assert fake.requests[0].headers["Authorization"] == "Bearer sk-test"
    finally:
        fake.close()


def test_a_private_home_without_a_provider_fails_the_start_with_the_import_hint(user, tmp_path, harness, scv_home):
    server = install_nested(user, tmp_path / "log", "next; reply '{\"protocol_version\":3}'\nnext; refuse "
                            "'no model provider is configured; set [provider] active'\nnext")
    args = acp_args("scv", server.executable, "go")
    args["argv"], args["delegation"] = [str(server.executable), "server", "--stdio"], HANDLE
    with pytest.raises(ToolFailure) as failure:
        nested_scv.start(args, harness.context(args))
    fields = failure.value.fields
    assert "refused session.start: no model provider is configured" in str(failure.value)
    assert "scv agents login scv" in fields["hint"] and failure.value.private.available is False
    assert failure.value.private.conversation_ended is True and records.read(scv_home, HANDLE) is None
