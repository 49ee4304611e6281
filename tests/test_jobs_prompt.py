"""Delegate first: with background jobs on, the system prompt asks the main agent to stay
available and hand real work to background jobs; with them off it only asks for self-contained
briefs, and with no agent on offer it says nothing of delegating."""

from scv.config.load import load_config
from scv.session.prompt import system_prompt
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry
from tests.delegation_fakes import fake_agent, session_services
from tests.fakes import setup_fake_home


def prompt_for(workspace) -> str:
    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    return system_prompt(None, list(build_registry(ctx, session_services(ctx))), ctx)


def test_background_guidance_follows_the_setting(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    assert "## Working in the background" not in prompt_for(workspace)      # no agent on offer
    fake_agent(tmp_path, "codex", "exit 0\n")
    text = prompt_for(workspace)
    assert "## Delegating work" in text and "## Working in the background" in text
    assert '"background": true' in text and "[SCV background report]" in text and "agent_wait" in text
    (scv_home / "config.toml").write_text("[agent]\nmax_background = 0\n")
    off = prompt_for(workspace)
    assert "## Delegating work" in off and "## Working in the background" not in off
    assert "self-contained brief" in off            # without jobs the section only asks for that
    assert "[SCV background report]" not in off and "agent_wait" not in off


def test_the_section_names_the_users_preference_in_order(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "exit 0\n")
    fake_agent(tmp_path, "claude", "exit 0\n")
    (scv_home / "config.toml").write_text('[agent]\nprefer = ["claude", "codex"]\n')
    text = prompt_for(workspace)
    assert "The user prefers, in order: claude, codex. A call that names no agent runs on claude" in text
    assert "- codex (Codex)" in text and "- claude (Claude Code)" in text
