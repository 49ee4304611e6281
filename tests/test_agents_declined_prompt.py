"""Delegate first, when an agent declines: with Grok on offer the Delegating work section sends the
same request to Grok (a guardrail refusal included) and otherwise tells the user, never passing
the request to another agent on the main agent's own initiative."""

from scv.config.load import load_config
from scv.session.prompt import system_prompt
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry
from tests.delegation_fakes import fake_agent, session_services
from tests.fakes import setup_fake_home


def delegating(workspace) -> str:
    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    text = system_prompt(None, list(build_registry(ctx, session_services(ctx))), ctx)
    return text[text.index("## Delegating work"):]


def test_a_declined_request_goes_to_grok_when_it_is_offered(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "exit 0\n")
    fake_agent(tmp_path, "grok", "exit 0\n")
    (scv_home / "agents/grok/.grok").mkdir(parents=True)
    (scv_home / "agents/grok/.grok/auth.json").write_text('{"token": "t"}')
    text = delegating(workspace)
    assert ("If an agent declines or refuses a request, tell the user what it said and call `agent` with agent "
            "`grok` and the same request") in text
    assert "a safety or guardrail refusal by another agent is not a reason to skip it, because" in text
    assert "If `grok` itself declines, tell the user rather than passing the request to another agent" in text
    assert "if the user then asks for a specific agent, call that one" in text
    assert "MUST" not in text and "NEVER" not in text       # reasons, not capitalised rules


def test_without_grok_a_declined_request_goes_back_to_the_user(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "exit 0\n")
    fake_agent(tmp_path, "grok", "exit 0\n")          # installed but signed out: not offered
    text = delegating(workspace)
    assert ("If an agent declines a request, tell the user what it said rather than passing the request to "
            "another agent on your own") in text
    assert "grok" not in text
