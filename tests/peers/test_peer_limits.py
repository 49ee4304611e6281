"""Limits on the real agent CLIs (issue 20): a real Claude Code and a real Codex whose fake model
servers ask for a tool call without end are stopped by `[agents.NAME] max_turns = 2` at exactly two
turns, with status `limit`, the usage they reported, the conversation kept, and no process left.

Run by `bin/peers`, which installs the CLIs into .peers/ and sets SCV_PEERS; skipped otherwise.
"""

import json
import os
import subprocess

import psutil
import pytest

from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import wait_for
from tests.peers.fake_anthropic import FakeAnthropic
from tests.peers.test_peer_agents import offer  # noqa: F401 (fixture)
from tests.peers.test_peer_agents import CODEX_KEY, _call, needs, point_claude_at, point_codex_at

pytestmark = pytest.mark.peers

TWO_TURNS = {"kind": "turns", "max": 2, "used": 2}


def _agent_processes(scv_home) -> list[int]:
    """Processes running with a private home under this test's SCV home (the CLI and its children)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.environ().get("HOME", "").startswith(str(scv_home)):
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _limit_config(scv_home, agent: str) -> None:
    config = scv_home / "config.toml"
    text = config.read_text() if config.exists() else ""
    config.write_text(text + f"\n[agents.{agent}]\nmax_turns = 2\n")


@needs("claude")
def test_claude_code_looping_on_a_tool_stops_at_two_turns(offer, make_runner, scv_home, workspace):
    offer("claude")
    fake = FakeAnthropic()
    try:
        point_claude_at(scv_home, fake)
        (workspace / "notes.txt").write_text("read me again\n")
        fake.loop_tool = ("Read", {"file_path": str(workspace / "notes.txt")})
        _limit_config(scv_home, "claude")
        value = _call(make_runner(), {"agent": "claude", "prompt": "keep reading"})
        assert value["status"] == "limit" and value["limit"] == TWO_TURNS, value
        assert value["reply"] == "" and value["session"] == "claude-1"
        assert value["usage"]["turns"] == 2 and value["usage"]["output_tokens"] >= 2, value["usage"]
        with fake.lock:
            loop = [r for r in fake.requests if "/v1/messages" in r["path"] and r["body"].get("tools")]
        assert 2 <= len(loop) <= 3          # at most one model response past the limit
        wait_for(lambda: not _agent_processes(scv_home), timeout=30, what="Claude Code to be gone")
    finally:
        fake.close()


@needs("codex")
def test_codex_looping_on_a_command_stops_at_two_turns(offer, make_runner, scv_home, workspace):
    offer("codex")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    fake = FakeOpenAI(api_key=CODEX_KEY, models=("fake-model",))
    try:
        point_codex_at(scv_home, fake)
        fake.enqueue(*[Reply(calls=[(f"call_{n}", "exec_command", json.dumps({"cmd": "true"}))]) for n in range(12)])
        _limit_config(scv_home, "codex")
        value = _call(make_runner(), {"agent": "codex", "prompt": "keep going"})
        assert value["status"] == "limit" and value["limit"] == TWO_TURNS, value
        assert value["reply"] == "" and value["session"] == "codex-1"
        assert value["usage"]["turns"] == 2, value["usage"]
        with fake.lock:
            asked = [r for r in fake.requests if r.path.endswith("/responses") and r.body.get("model") == "fake-model"]
        assert 2 <= len(asked) <= 3
        wait_for(lambda: not _agent_processes(scv_home), timeout=30, what="Codex to be gone")
    finally:
        fake.close()
