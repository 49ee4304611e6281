"""The choice of backend per agent (`[agents.<name>] transport`, `command`, `args`), the nested
`scv` entry of the catalog, and the configuration errors that name the agent's key."""

import os
from pathlib import Path

import pytest

from scv.agents.offered import discover
from scv.agents.transport import LIVE_BACKENDS, choose
from scv.config.load import load_config
from scv.core.agents.descriptors import ACP, DESCRIPTORS, NESTED, RESUME
from scv.core.errors import ConfigError

RUNNING = ("/usr/bin/python3", "-m", "scv")
ALL = frozenset({RESUME}) | LIVE_BACKENDS


def resolver(*installed: str):
    def resolve(descriptor, name):
        if os.path.isabs(name):
            return name if name in installed else None
        return f"/home/u/.local/bin/{name}" if name in installed else None
    return resolve


def pick(agent, *installed, backends=ALL, **settings):
    return choose(DESCRIPTORS[agent], resolve=resolver(*installed), running_scv=RUNNING, backends=backends, **settings)


def test_auto_prefers_an_installed_acp_server_and_falls_back_to_the_cli():
    assert pick("claude", "claude", "claude-agent-acp").argv == ("/home/u/.local/bin/claude-agent-acp",)
    assert pick("claude", "claude").transport == RESUME
    assert pick("claude", "claude").argv == ("/home/u/.local/bin/claude", "-p")
    codex = pick("codex", "codex-acp")
    assert codex.transport == ACP and codex.full_argv is None
    assert pick("claude") is None


def test_grok_and_dsh_run_their_acp_server_from_their_own_executable():
    grok = pick("grok", "grok")
    assert grok.transport == ACP and grok.argv == ("/home/u/.local/bin/grok", "agent", "stdio")
    assert grok.full_argv == ("/home/u/.local/bin/grok", "agent", "--always-approve", "stdio")
    assert pick("dsh", "dsh").argv == ("/home/u/.local/bin/dsh", "--profile", "acp")
    assert pick("grok", "grok", transport="resume").argv == ("/home/u/.local/bin/grok",)


def test_acp_required_hides_a_missing_server_and_resume_never_uses_it():
    assert pick("claude", "claude", transport="acp") is None
    assert pick("claude", "claude", "claude-agent-acp", transport="acp").transport == ACP
    assert pick("claude", "claude", "claude-agent-acp", transport="resume").transport == RESUME
    assert pick("pi", "pi").transport == RESUME           # pi has no ACP server


def test_a_custom_command_keeps_auto_on_that_cli_and_args_replace_the_fixed_ones():
    chosen = pick("claude", "/opt/claude", "claude-agent-acp", command="/opt/claude")
    assert chosen.transport == RESUME and chosen.argv == ("/opt/claude", "-p")
    assert pick("claude", "claude-agent-acp", command="/opt/missing") is None
    # Custom args alone do not matter to the choice.
    assert pick("claude", "claude", "claude-agent-acp", args=["--x"]).transport == ACP
    assert pick("claude", "claude", args=["-p", "--x"]).argv == ("/home/u/.local/bin/claude", "-p", "--x")


def test_without_the_live_backends_auto_falls_back_and_acp_is_not_offered():
    only = frozenset({RESUME})
    assert pick("claude", "claude", "claude-agent-acp", backends=only).transport == RESUME
    assert pick("claude", "claude-agent-acp", transport="acp", backends=only) is None
    assert pick("scv", "scv", backends=only) is None


def test_nested_scv_runs_an_installed_scv_or_the_running_one():
    assert pick("scv", "scv").argv == ("/home/u/.local/bin/scv", "server", "--stdio")
    assert pick("scv").argv == (*RUNNING, "server", "--stdio")
    assert pick("scv").transport == NESTED
    assert pick("scv", "/opt/scv", command="/opt/scv").argv == ("/opt/scv", "server", "--stdio")
    assert pick("scv", command="/opt/missing") is None
    scv = DESCRIPTORS["scv"]
    assert scv.takes_model and scv.takes_session and not scv.takes_effort
    assert scv.line.startswith("a nested session for a self-contained sub-task kept out of this context")
    assert DESCRIPTORS["grok"].takes_session_on(ACP) and not DESCRIPTORS["grok"].takes_session_on(RESUME)


def test_discover_offers_the_nested_scv_only_with_a_provider_in_its_private_home(tmp_path):
    home = tmp_path / "scv-home"
    environ = {"HOME": str(tmp_path / "user"), "PATH": "/nonexistent"}
    assert "scv" not in discover(environ, home, backends=ALL)
    private = home / "agents" / "scv"
    private.mkdir(parents=True)
    (private / "config.toml").write_text('[provider]\nactive = "scv"\n[providers.scv]\nmodel = "m"\n')
    offered = discover(environ, home, backends=ALL)
    assert offered["scv"].transport == NESTED and offered["scv"].choice.argv[-2:] == ("server", "--stdio")
    assert discover(environ, home)["scv"].transport == NESTED     # the agent tool runs every backend


def test_discover_applies_the_users_command_and_args(tmp_path):
    user = tmp_path / "user"
    (user / ".local" / "bin").mkdir(parents=True)
    tool = user / ".local" / "bin" / "my-claude"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    home = tmp_path / "own-home"
    home.mkdir()
    (home / "config.toml").write_text('[agents.claude]\ncommand = "my-claude"\nargs = ["-p", "--bare"]\n')
    settings = load_config(None, home).agents
    offered = discover({"HOME": str(user), "PATH": "/nonexistent"}, home, settings=settings)
    assert offered["claude"].executable == str(tool)
    assert offered["claude"].descriptor.fixed_args == ("-p", "--bare")


@pytest.mark.parametrize("text,sentence", [
    ('[agents.claude]\ntransport = "sometimes"\n', "key agents.claude.transport: invalid enum value 'sometimes'"),
    ('[agents.claude]\ntranport = "acp"\n', "unknown key agents.claude.tranport"),
    ('[agents.pi]\ntransport = "acp"\n', "agents.pi.transport is \"acp\", but pi has no Agent Client Protocol server"),
    ('[agents.claude]\ntransport = "acp"\ncommand = "/opt/claude"\n',
     "agents.claude.command is set, but transport = \"acp\" never runs the CLI"),
    ('[agents.claude]\ncommand = "bin/claude"\n', "agents.claude.command 'bin/claude' is a relative path"),
    ('[agents.claude]\ncommand = " "\n', "agents.claude.command must name an executable"),
    ('[agents.scv]\ntransport = "resume"\n', "agents.scv.transport is set, but the nested SCV always runs"),
    ('[agents.scv]\nargs = ["x"]\n', "agents.scv.args is set, but the nested SCV always runs scv server --stdio"),
    ('[agents.scv]\neffort = "high"\n', "agents.scv.effort is set, but scv does not take an effort"),
    ('[providers.x]\nwire_api = "soap"\n', "key providers.x.wire_api"),
])
def test_configuration_errors_name_the_agents_key(tmp_path, text, sentence):
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(None, tmp_path)
    assert sentence in str(err.value)
    assert "[...]" not in str(err.value)


@pytest.mark.parametrize("key", ["transport = \"resume\"", "command = \"/bin/true\"", "args = []"])
def test_a_project_config_sets_none_of_the_agent_keys(tmp_path, key):
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".scv").mkdir(parents=True)
    home.mkdir()
    (ws / ".scv" / "config.toml").write_text(f"[agents.claude]\n{key}\n")
    with pytest.raises(ConfigError) as err:
        load_config(Path(ws), home)
    assert "may not be set by a project config" in str(err.value)


def test_live_approval_summaries_name_the_server_the_prompt_and_full_permissions():
    from scv.agents.offered import OfferedAgent
    from scv.tools.agent.live_plan import FACTORIES, server_argv, summary
    grok = pick("grok", "grok")
    offered = OfferedAgent(DESCRIPTORS["grok"], grok.executable, grok)
    assert server_argv(offered, True) == ["/home/u/.local/bin/grok", "agent", "--always-approve", "stdio"]
    text = summary(offered, prompt="fix the\nbuild", directory="/ws", timeout_seconds=3600, full_permissions=True,
                   conversation=None, model="grok-5")
    assert text.startswith('agent grok: Launch /home/u/.local/bin/grok with args ["agent", "--always-approve", '
                           '"stdio"] over the Agent Client Protocol, kept for the conversation, in /ws, model grok-5 '
                           '(timeout 3600 s), prompt: "fix the\\\\nbuild". Delegate risk:')
    assert "come back here for approval" in text and text.endswith("sandbox switched off.")
    nested = pick("scv")
    later = summary(OfferedAgent(DESCRIPTORS["scv"], nested.executable, nested), prompt="go", directory="/ws",
                    timeout_seconds=60, full_permissions=False, conversation="scv-1")
    assert later.startswith("agent scv: Continue conversation scv-1 (/usr/bin/python3 as a nested SCV session) in /ws")
    assert server_argv(offered, False) == ["/home/u/.local/bin/grok", "agent", "stdio"]
    from workers.live import acp, nested_scv
    from workers.runtime import resolve
    assert resolve(FACTORIES["acp"]) is acp.start and resolve(FACTORIES["scv"]) is nested_scv.start
    cli = pick("pi", "pi")
    with pytest.raises(ValueError):
        server_argv(OfferedAgent(DESCRIPTORS["pi"], cli.executable, cli), False)
