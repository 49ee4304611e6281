"""SCV's ACP client against the captured transcripts of the real claude-agent-acp and codex-acp
(tests/fixtures/acp/), replayed by a fake server process: what SCV makes of their real replies,
sign-in failures, permission requests and cancellations. Then the captured updates through one
turn's state, line by line (no throttle)."""

import msgspec
import pytest

from tests.live_fakes import harness, user  # noqa: F401 (fixtures)
from tests.live_fakes import acp_args, install_replay, transcript_updates
from workers.live import acp
from workers.live.acp_turn import TurnState
from workers.live.acp_wire import decode_update
from workers.runtime import ToolFailure

SERVERS = {"claude": "claude-agent-acp", "codex": "codex-acp"}


@pytest.fixture
def replay(user, tmp_path, harness):
    started = []

    def begin(agent, capture, prompt="say hi", answer=None):
        server = install_replay(user, tmp_path / "log", agent, capture, SERVERS[agent])
        args = acp_args(agent, server.executable, prompt)
        ctx = harness.context(args, answer=answer)
        conversation = acp.start(args, ctx)
        started.append(conversation)
        return conversation, args, ctx, server
    yield begin
    for conversation in started:
        conversation.close()


def answers(server):
    """What SCV answered to the agent's own requests, as the replay logged them."""
    return [e["message"] for e in server.events("client") if "method" not in e["message"]]


def test_claude_text_reply_and_usage(replay):
    agent, args, ctx, server = replay("claude", "acp_text")
    result = agent.turn(args, ctx)
    assert result.status == "completed" and result.reply == "Hello from the fake backend."
    assert result.usage == {"turns": 1, "input_tokens": 11, "output_tokens": 5, "cached_input_tokens": 0, "cost_usd": None, "cost_source": None}
    assert result.private.vendor_session and not server.events("mismatch")


@pytest.mark.parametrize("approve,option", [(False, "reject"), (True, "allow")])
def test_claude_permission_request_is_relayed_and_answered_by_kind(replay, approve, option):
    agent, args, ctx, server = replay("claude", "acp_tool_reject", "create a marker file",
                                      answer=lambda ask: approve)
    result = agent.turn(args, ctx)
    assert result.status == "completed"
    assert [(a.tool, a.risk, a.summary) for a in ctx.asked] == [
        ("agent", "process", "[claude-1 acp] touch lab_marker.txt && echo created (execute)")]
    assert answers(server) == [{"jsonrpc": "2.0", "id": 0,
                                "result": {"outcome": {"outcome": "selected", "optionId": option}}}]


def test_claude_read_only_command_needs_no_permission(replay):
    agent, args, ctx, server = replay("claude", "acp_tool_echo", "run echo")
    assert agent.turn(args, ctx).status == "completed" and ctx.asked == []


def test_claude_signed_out_fails_at_the_prompt_with_the_login_hint(replay):
    agent, args, ctx, server = replay("claude", "acp_signed_out")
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert "Authentication required" in str(failure.value)
    assert "scv agents login claude" in failure.value.fields["hint"]
    assert failure.value.private.available is False


def test_claude_cancel_then_later_turns_on_the_same_session(replay, harness):
    agent, args, ctx, server = replay("claude", "acp_cancel", "tell me a long story")
    ctx.cancel_in(0.3)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert failure.value.fields["status"] == "cancelled" and not failure.value.private.conversation_ended
    second = dict(args, prompt="say hi", turn=2)
    # claude-agent-acp answers the prompt after a cancel at once with nothing (see the capture's notes).
    assert agent.turn(second, harness.context(second)).usage == {"turns": 1, "input_tokens": 0, "output_tokens": 0,
                                                                  "cached_input_tokens": 0, "cost_usd": None,
                                                                  "cost_source": None}
    third = dict(args, prompt="say hi once more", turn=3)
    assert agent.turn(third, harness.context(third)).reply.endswith("Hello from the fake backend.")


def test_codex_signed_out_fails_at_session_new(user, tmp_path, harness, scv_home):
    server = install_replay(user, tmp_path / "log", "codex", "signed_out", "codex-acp")
    args = acp_args("codex", server.executable, "say hi")
    with pytest.raises(ToolFailure) as failure:
        acp.start(args, harness.context(args))
    assert "failed at session/new: Authentication required" in str(failure.value)
    assert "scv agents login codex" in failure.value.fields["hint"]


def test_codex_text_reply_without_usage(replay):
    agent, args, ctx, server = replay("codex", "text")
    result = agent.turn(args, ctx)
    assert result.reply == "hi from fake" and result.usage["turns"] == 1 and result.usage["input_tokens"] is None


def test_codex_denied_escalation_ends_its_turn_cancelled(replay):
    agent, args, ctx, server = replay("codex", "permission_reject", "run echo hello with escalation")
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert failure.value.fields["status"] == "cancelled"
    assert "after a permission it asked for was denied" in str(failure.value)
    assert ctx.asked[0].summary == "[codex-1 acp] echo hello (execute)" and ctx.asked[0].risk == "process"
    answer = answers(server)[0]
    assert answer["id"] == "71dcd591-26ec-48f7-8f5f-9d1150ff7024"       # the agent's own (string) id
    assert answer["result"]["outcome"] == {"outcome": "selected", "optionId": "abort"}


def test_codex_cancel(replay):
    agent, args, ctx, server = replay("codex", "cancel", "take your time")
    ctx.cancel_in(0.3)
    with pytest.raises(ToolFailure) as failure:
        agent.turn(args, ctx)
    assert failure.value.fields["status"] == "cancelled" and not failure.value.private.conversation_ended


def lines_of(agent: str, capture: str) -> tuple[list[str], str]:
    lines = []
    state = TurnState(1 << 20, lines.append)
    for params in transcript_updates(agent, capture):
        update = decode_update(params)
        if update is not None:
            state.on_update(update)
    state.finish()
    return lines, state.reply()


def test_captured_updates_become_these_progress_lines():
    lines, reply = lines_of("claude", "acp_tool_reject")
    assert lines == ["Terminal", "touch lab_marker.txt && echo created",
                     "touch lab_marker.txt && echo created failed",
                     'Tool finished. Result was: {"text": "User refused permission to run tool", "is_error": true}']
    assert lines_of("claude", "acp_text") == (["Hello from the fake backend."], "Hello from the fake backend.")
    codex, _ = lines_of("codex", "text")
    assert codex == ["hi from fakehi from fake"]         # two prompts' chunks, one line without a newline


def test_every_captured_update_decodes_or_is_a_known_ignored_kind():
    for agent, capture in (("claude", "acp_modes"), ("claude", "acp_cancel"), ("codex", "text"), ("codex", "tool")):
        for params in transcript_updates(agent, capture):
            kind = msgspec.json.decode(params)["update"]["sessionUpdate"]
            assert decode_update(params) is not None, kind
