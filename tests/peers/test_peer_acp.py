"""SCV's ACP client (workers/live/acp.py) against the real ACP servers bin/peers pins
(claude-agent-acp, codex-acp), each pointed at a fake model server on 127.0.0.1 through files in
its private SCV home, driven as the live worker runtime drives it (tests/live_fakes.py): a
conversation on one server process, relayed permissions approved (the file appears) and denied
(it does not), and a cancel while the model is still answering.

Run by `bin/peers`, which installs the servers into .peers/ and sets SCV_PEERS; skipped otherwise.
"""

import json
import subprocess
import threading

import pytest

from tests.fake_openai import FakeOpenAI, Reply, Stall
from tests.fakes import wait_for
from tests.live_fakes import harness, live  # noqa: F401 (fixtures)
from tests.live_fakes import acp_args
from tests.peers.fake_anthropic import FakeAnthropic
from tests.peers.test_peer_agents import CODEX_KEY, TIMEOUT, _bin, needs, point_claude_at, point_codex_at
from workers.live import acp
from workers.runtime import ToolFailure

pytestmark = pytest.mark.peers


class Conversation:
    """One live ACP agent and its calls, numbered like the `agent` tool numbers them."""

    def __init__(self, harness, live, agent: str, server: str):
        self.harness = harness
        self.live = live
        self.args = acp_args(agent, _bin(server), "")
        self.agent = None

    def context(self, prompt: str, answer=None):
        """The next call's context (its arguments become the conversation's current ones)."""
        self.args = dict(self.args, prompt=prompt, turn=self.agent.turns + 1 if self.agent else 1)
        return self.harness.context(self.args, answer=answer, timeout=TIMEOUT)

    def turn(self, prompt: str, answer=None):
        ctx = self.context(prompt, answer)
        return self.run(ctx), ctx

    def run(self, ctx) -> dict:
        if self.agent is None:
            self.agent = acp.start(self.args, ctx)
            self.live.append(self.agent)
        return self.agent.turn(self.args, ctx).public()

    def cancel_mid_turn(self, prompt: str, requests) -> None:
        """A call cancelled once `requests()` (what the model server received) carries `prompt`;
        the agent settles it and the conversation goes on."""
        ctx = self.context(prompt)
        cancel_when(ctx, lambda: any(prompt in json.dumps(body) for body in requests()))
        with pytest.raises(ToolFailure) as failure:
            self.run(ctx)
        fields = failure.value.fields
        assert fields["status"] == "cancelled" and not failure.value.private.conversation_ended, (failure.value, fields)

    @property
    def pid(self) -> int:
        return self.agent.proc.pid


def cancel_when(ctx, condition) -> threading.Thread:
    """Cancels the call from another thread once `condition` holds (the call is blocked meanwhile)."""
    def run():
        wait_for(condition, timeout=TIMEOUT, what="the turn to reach the model")
        ctx.cancel()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# --- Claude Code over claude-agent-acp -----------------------------------------------------------

@pytest.fixture
def anthropic(scv_home, monkeypatch):
    # Run as a plain root user: claude-agent-acp takes any IS_SANDBOX as leave to start its CLI with
    # --allow-dangerously-skip-permissions, which the CLI refuses as root unless IS_SANDBOX is "1".
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    fake = FakeAnthropic()
    point_claude_at(scv_home, fake)
    yield fake
    if fake.hold is not None:
        fake.hold.set()
    fake.close()


def _main_requests(fake: FakeAnthropic) -> list[dict]:
    """The agent loop's requests (they offer tools), not the CLI's side queries."""
    with fake.lock:
        return [r["body"] for r in fake.requests if "/v1/messages" in r["path"] and r["body"].get("tools")]


@needs("claude-agent-acp")
def test_claude_agent_acp_conversation_and_relayed_permissions(harness, live, anthropic, workspace):
    talk = Conversation(harness, live, "claude", "claude-agent-acp")
    first, _ = talk.turn("say hi")
    assert first["status"] == "completed" and first["reply"].startswith(anthropic.text), first
    assert first["usage"]["output_tokens"] >= 1
    pid = talk.pid
    second, _ = talk.turn("again")
    assert second["status"] == "completed" and second["reply"].startswith(anthropic.text), second
    assert talk.pid == pid and talk.agent.proc.alive
    # Turn 2 went to the same session: the model saw turn 1.
    assert "say hi" in json.dumps(_main_requests(anthropic)[-1]["messages"])

    for approve, name in ((True, "approved.txt"), (False, "denied.txt")):
        target = workspace / name
        prompt = f"write {name}"
        anthropic.tool_use = (prompt, "Write", {"file_path": str(target), "content": "written by the fake model\n"})
        result, ctx = talk.turn(prompt, answer=lambda ask: approve)
        assert result["status"] == "completed", result
        assert [(a.tool, a.risk) for a in ctx.asked] == [("agent", "filesystem")], (ctx.asked, result)
        assert ctx.asked[0].summary.startswith("[claude-1 acp] ") and ctx.asked[0].summary.endswith("(edit)")
        assert target.exists() is approve
    assert talk.pid == pid


@needs("claude-agent-acp")
def test_claude_agent_acp_cancel_mid_turn_keeps_the_conversation(harness, live, anthropic):
    talk = Conversation(harness, live, "claude", "claude-agent-acp")
    talk.turn("say hi")
    pid = talk.pid
    anthropic.hold = threading.Event()
    talk.cancel_mid_turn("take your time", lambda: _main_requests(anthropic))
    anthropic.hold.set()
    anthropic.hold = None
    after, _ = talk.turn("still there?")
    assert after["status"] == "completed" and talk.pid == pid, after


# --- Codex over codex-acp ------------------------------------------------------------------------

@pytest.fixture
def openai(scv_home, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    fake = FakeOpenAI(api_key=CODEX_KEY, models=("fake-model",))
    point_codex_at(scv_home, fake)
    yield fake
    fake.close()


def _turn_requests(fake: FakeOpenAI) -> list[dict]:
    """The agent's requests to its model (not the title its side model is asked for)."""
    with fake.lock:
        return [r.body for r in fake.requests if r.path.endswith("/responses") and r.body.get("model") == "fake-model"]


# codex-acp puts Codex's own warnings (such as "Model metadata for `fake-model` not found") into the
# message text, so replies are checked by their end.

@needs("codex-acp")
def test_codex_acp_conversation_and_relayed_permissions(harness, live, openai, workspace):
    talk = Conversation(harness, live, "codex", "codex-acp")
    openai.enqueue(Reply(text="hi from the fake"))
    first, _ = talk.turn("say hi")
    assert first["status"] == "completed" and first["reply"].endswith("hi from the fake"), first
    pid = talk.pid
    openai.enqueue(Reply(text="second answer"))
    second, _ = talk.turn("again")
    assert second["status"] == "completed" and second["reply"].endswith("second answer"), second
    assert talk.pid == pid
    assert "hi from the fake" in json.dumps(_turn_requests(openai)[-1]["input"])

    target = workspace / "approved.txt"
    command = {"cmd": f"touch {target}", "sandbox_permissions": "require_escalated",
               "justification": "the test needs this file"}
    openai.enqueue(Reply(calls=[("call_approve", "exec_command", json.dumps(command))]), Reply(text="made it"))
    result, ctx = talk.turn("make approved.txt", answer=lambda ask: True)
    assert result["status"] == "completed" and result["reply"].endswith("made it"), result
    assert [(a.tool, a.risk) for a in ctx.asked] == [("agent", "process")], ctx.asked
    assert ctx.asked[0].summary.startswith("[codex-1 acp] ") and ctx.asked[0].summary.endswith("(execute)")
    assert target.exists()

    target = workspace / "denied.txt"
    command = dict(command, cmd=f"touch {target}")
    openai.enqueue(Reply(calls=[("call_deny", "exec_command", json.dumps(command))]), Reply(text="made it anyway"))
    ctx = talk.context("make denied.txt", answer=lambda ask: False)
    with pytest.raises(ToolFailure) as failure:         # codex-acp ends the turn of a refused command
        talk.run(ctx)
    assert failure.value.fields["status"] == "cancelled" and not failure.value.private.conversation_ended
    assert "after a permission it asked for was denied" in str(failure.value)
    assert len(ctx.asked) == 1 and not target.exists()
    assert talk.pid == pid and talk.agent.proc.alive


@needs("codex-acp")
def test_codex_acp_cancel_mid_turn_keeps_the_conversation(harness, live, openai):
    talk = Conversation(harness, live, "codex", "codex-acp")
    openai.enqueue(Reply(text="hi from the fake"))
    talk.turn("say hi")
    pid = talk.pid
    openai.enqueue(Stall(TIMEOUT))
    talk.cancel_mid_turn("take your time", lambda: _turn_requests(openai))
    openai.enqueue(Reply(text="back again"))
    after, _ = talk.turn("still there?")
    assert after["status"] == "completed" and after["reply"].endswith("back again") and talk.pid == pid, after
