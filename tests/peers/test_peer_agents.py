"""The `agent` tool against the real agent CLIs (Claude Code, Codex, pi at the versions bin/peers
pins), each pointed at a fake model server on 127.0.0.1 through files in its private SCV home:
replies, usage, conversations across turns with the real resume arguments, and sign-in failures.

Run by `bin/peers`, which installs the CLIs into .peers/ and sets SCV_PEERS; skipped otherwise.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI, Reply
from tests.peers.fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.peers

PEERS = Path(os.environ["SCV_PEERS"]) if os.environ.get("SCV_PEERS") else None
TIMEOUT = 120


def _bin(name: str) -> Path | None:
    if PEERS is None:
        return None
    path = PEERS / "node_modules" / ".bin" / name
    return path if path.exists() else None


def needs(name: str):
    reason = ("the real agent CLIs run only under bin/peers (it installs them into .peers/)" if PEERS is None
              else f"{name} is not installed in {PEERS}; run bin/peers --install")
    return pytest.mark.skipif(_bin(name) is None, reason=reason)


@pytest.fixture
def offer(tmp_path, monkeypatch):
    """Links the installed CLIs into a fake user's ~/.local/bin, where SCV looks first."""
    user_bin = tmp_path / "user" / ".local" / "bin"
    user_bin.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))

    def link(*names: str) -> None:
        for name in names:
            (user_bin / name).symlink_to(_bin(name))
    return link


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(text)


CLAUDE_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
              "CLAUDE_CODE_MAX_RETRIES": "0"}
CODEX_KEY = "sk-codex-fake"


def point_claude_at(scv_home: Path, fake: FakeAnthropic) -> None:
    """Claude Code in SCV's private home for it talks to the fake Anthropic server, quietly."""
    settings = {"env": {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "sk-ant-fake", **CLAUDE_ENV}}
    _write(scv_home / "agents" / "claude" / ".claude" / "settings.json", json.dumps(settings))


def point_codex_at(scv_home: Path, fake: FakeOpenAI) -> None:
    """Codex in SCV's private home for it uses the fake OpenAI server's `fake-model`, no retries."""
    _write(scv_home / "agents" / "codex" / "config.toml",
           'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "fake"\n'
           f'base_url = "{fake.base_url}"\nwire_api = "responses"\n'
           f'experimental_bearer_token = "{CODEX_KEY}"\nrequest_max_retries = 0\nstream_max_retries = 0\n')


def _call(runner, raw: dict) -> dict:
    result = runner.run(runner.prepare("agent", {**raw, "timeout_seconds": TIMEOUT}))
    return result.value


@needs("claude")
def test_claude_code_turns_and_sign_in_failure(offer, make_runner, scv_home, workspace):
    offer("claude")
    fake = FakeAnthropic()
    try:
        point_claude_at(scv_home, fake)
        runner = make_runner()
        first = _call(runner, {"agent": "claude", "prompt": "say hi"})
        assert first["status"] == "completed", first
        assert first["reply"] == "Hello from the fake Anthropic endpoint."
        assert first["session"] == "claude-1" and first["usage"]["output_tokens"] >= 1
        second = _call(runner, {"session": "claude-1", "prompt": "again"})
        assert second["status"] == "completed" and second["turn"] == 2, second
        fake.statuses = [401] * 5
        failed = _call(runner, {"agent": "claude", "prompt": "say hi"})
        assert failed["status"] == "failed" and "scv agents login claude" in failed.get("hint", ""), failed
    finally:
        fake.close()


@needs("claude")
def test_claude_code_signed_out(offer, make_runner):
    offer("claude")
    value = _call(make_runner(), {"agent": "claude", "prompt": "say hi"})
    assert value["status"] == "failed" and "scv agents login claude" in value["hint"], value


@needs("codex")
def test_codex_turns_resume_with_options(offer, make_runner, scv_home, workspace):
    offer("codex")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    fake = FakeOpenAI(api_key=CODEX_KEY, models=("fake-model", "other-model"))
    try:
        point_codex_at(scv_home, fake)
        fake.enqueue(*[Reply(text="hi from the fake")] * 4)
        runner = make_runner()
        first = _call(runner, {"agent": "codex", "prompt": "say hi"})
        assert first["status"] == "completed" and first["reply"] == "hi from the fake", first
        with fake.lock:
            fake.queue.clear()
        fake.enqueue(*[Reply(text="second answer")] * 4)
        second = _call(runner, {"session": first["session"], "prompt": "again", "model": "other-model",
                                "effort": "low"})
        assert second["status"] == "completed" and second["reply"] == "second answer", second
        assert second["turn"] == 2
        last = fake.requests[-1].body
        assert last["model"] == "other-model" and last.get("reasoning", {}).get("effort") == "low"
        assert not list((scv_home / "agents" / "codex" / "tmp").iterdir())   # the -o folders are gone
    finally:
        fake.close()


@needs("pi")
def test_pi_turns_continue_the_same_session(offer, make_runner, scv_home):
    offer("pi")
    fake = FakeOpenAI(api_key="sk-pi-fake", models=("fake-model",))
    try:
        agent_dir = scv_home / "agents" / "pi" / ".pi" / "agent"
        _write(agent_dir / "models.json", json.dumps({"providers": {"fake": {
            "baseUrl": fake.base_url, "api": "openai-completions", "apiKey": "sk-pi-fake",
            "models": [{"id": "fake-model"}]}}}))
        _write(agent_dir / "settings.json", json.dumps({"defaultProvider": "fake", "defaultModel": "fake-model",
                                                        "retry": {"enabled": False}}))
        fake.enqueue(Reply(text="hi from pi's fake"))
        runner = make_runner()
        first = _call(runner, {"agent": "pi", "prompt": "say hi"})
        assert first["status"] == "completed" and first["reply"] == "hi from pi's fake", first
        fake.enqueue(Reply(text="continued"))
        second = _call(runner, {"session": first["session"], "prompt": "again"})
        assert second["status"] == "completed" and second["reply"] == "continued", second
        history = fake.requests[-1].body["messages"]
        assert any("hi from pi's fake" in json.dumps(message) for message in history)
    finally:
        fake.close()
