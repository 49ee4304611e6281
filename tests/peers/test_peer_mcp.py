"""`scv mcp` as a real host uses it: the real Claude Code (pointed at the fake Anthropic server)
registered with `scv mcp` through `--mcp-config` calls SCV's `agent` tool with `agent: codex`, and
the real Codex (pointed at the fake OpenAI server) answers. The Codex reply reaches Claude's model
as the tool's result, and once Claude has exited no process of the run is left.

Run by `bin/peers`, which installs the CLIs into .peers/ and sets SCV_PEERS; skipped otherwise.
"""

import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import wait_for
from tests.peers.fake_anthropic import FakeAnthropic
from tests.peers.test_peer_agents import offer  # noqa: F401 (fixture)
from tests.peers.test_peer_agents import CLAUDE_ENV, CODEX_KEY, TIMEOUT, _bin, needs, point_codex_at

pytestmark = pytest.mark.peers

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "ask codex to say hi"


def _run_processes(marker: str) -> list[psutil.Process]:
    """Processes whose environment carries this run's SCV home (scv mcp, its workers, Codex)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.environ().get("SCV_HOME") == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@needs("claude")
@needs("codex")
def test_claude_code_hands_work_to_codex_through_scv_mcp(offer, scv_home, workspace, tmp_path, monkeypatch):
    offer("codex")
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    openai = FakeOpenAI(api_key=CODEX_KEY, models=("fake-model",))
    anthropic = FakeAnthropic()
    try:
        point_codex_at(scv_home, openai)
        openai.enqueue(*[Reply(text="hi from codex's fake")] * 4)
        anthropic.tool_use = (PROMPT, "mcp__scv__agent", {"agent": "codex", "prompt": "say hi"})
        servers = {"mcpServers": {"scv": {
            "command": str(ROOT / "bin" / "scv"), "args": ["mcp", "-C", str(workspace), "--auto-approve"],
            "env": {"SCV_HOME": str(scv_home), "HOME": os.environ["HOME"], "PATH": os.environ["PATH"]}}}}
        mcp_config = tmp_path / "mcp.json"
        mcp_config.write_text(json.dumps(servers))
        env = dict(os.environ, **CLAUDE_ENV, ANTHROPIC_BASE_URL=anthropic.base_url, ANTHROPIC_API_KEY="sk-ant-fake",
                   MCP_TIMEOUT="60000", MCP_TOOL_TIMEOUT=str(TIMEOUT * 1000),
                   ENABLE_TOOL_SEARCH="false")   # offer the MCP tools up front, not behind a search
        done = subprocess.run(
            [str(_bin("claude")), "-p", PROMPT, "--output-format", "json", "--mcp-config", str(mcp_config),
             "--strict-mcp-config", "--allowedTools", "mcp__scv__agent"],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
        outcome = json.loads(done.stdout)
        assert outcome["result"] == "tool result: ok", outcome

        with anthropic.lock:
            sent = json.dumps([r["body"] for r in anthropic.requests if "/v1/messages" in r["path"]])
        assert "hi from codex's fake" in sent          # Codex's reply came back to Claude as the tool result
        assert any("say hi" in json.dumps(r.body) for r in openai.requests)
        wait_for(lambda: not _run_processes(str(scv_home)), timeout=30,
                 what="scv mcp and the Codex it ran to be gone once Claude Code exited")
    finally:
        for proc in _run_processes(str(scv_home)):     # only on failure: never leave them behind
            proc.kill()
        anthropic.close()
        openai.close()
