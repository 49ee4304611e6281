"""Live agents in the OS sandbox: the process a conversation keeps (an ACP server, a nested SCV)
is started inside the first call's sandbox plan, as the CLI runs are (tests/test_sandbox_agent.py):
it writes its private home and the workspace but nothing else, reads none of the user's secrets,
keeps its confinement for every later turn, and its temporary folder goes with it."""

import os
import shlex
import sys

import pytest

from scv.agents.session import open_agent_session
from scv.config.load import load_config, scv_home as scv_home_path
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry
from scv.tools.services import Services
from tests.agent_fakes import install
from tests.live_fakes import PEER
from tests.sandbox_fakes import needs_landlock, plant_secrets

pytestmark = needs_landlock

NESTED_PROVIDER = ('[provider]\nactive = "scv"\n[providers.scv]\nkind = "openai"\nwire_api = "chat"\nmodel = "m"\n'
                   'base_url = "http://127.0.0.1:9/v1"\napi_key = "sk-unused"\n')


def probes(workspace, outside, planted) -> str:
    """Bash lines the live process runs once it has started, inside whatever confines it: what it
    could write and read goes to files in its own home."""
    reads = " ; ".join(f"cat {shlex.quote(str(path))} 2>/dev/null" for path in planted.values())
    return (f'echo kept > "$HOME/notes"\n'
            f"echo made > {workspace}/from-agent\n"
            f"{{ echo x > {outside}/escape; }} 2>/dev/null || echo refused > \"$HOME/refused\"\n"
            f'{{ {reads} ; }} > "$HOME/read" 2>/dev/null\n'
            f'grep NoNewPrivs /proc/self/status > "$HOME/status"\n'
            f'printf %s "$TMPDIR" > "$HOME/tmpdir"\n')


def acp_server(bin_dir, log_dir, before: str):
    """A fake claude-agent-acp: the probes, then the scripted ACP peer (tests/acp_peer.py)."""
    fake = install(bin_dir, "claude-agent-acp", log_dir)
    q = shlex.quote
    fake.write(before + f"exec {q(sys.executable)} {q(str(PEER))} --log {q(str(log_dir / 'peer.jsonl'))}\n")
    return "count", lambda reply: reply.startswith("turn ")


def nested_server(bin_dir, log_dir, before: str, scv_home):
    """A bash stand-in for `scv server --stdio`: the probes, then one reply per turn."""
    from tests.live_fakes import NESTED_HELPERS, emit
    fake = install(bin_dir, "scv", log_dir)
    private = scv_home / "agents" / "scv"
    private.mkdir(parents=True, exist_ok=True)
    (private / "config.toml").write_text(NESTED_PROVIDER)
    done = emit("turn.completed", turn_id="@T@", reply="nested turn @T@", usage={})
    fake.write(f"LOG={shlex.quote(str(log_dir / 'requests.jsonl'))}\n{NESTED_HELPERS}\n{before}handshake\nn=0\n"
               "while next; do\n  case \"$METHOD\" in\n"
               f"    turn.start) n=$((n+1)); T=turn-$n; reply \"{{\\\"turn_id\\\":\\\"$T\\\"}}\"; {done} ;;\n"
               "  esac\ndone\n")
    return "go", lambda reply: reply.startswith("nested turn ")


@pytest.mark.parametrize("agent", ["claude", "scv"])
def test_a_live_agents_process_is_sandboxed_with_its_home_writable(agent, supervisor, tmp_path, monkeypatch,
                                                                  scv_home, workspace):
    user_home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    outside = tmp_path / "outside"
    outside.mkdir()
    # SECRET-AGENT sits in claude's home: its own for claude, another agent's for scv.
    planted = {word: path for word, path in plant_secrets(user_home, scv_home).items()
               if not path.is_relative_to(scv_home / "agents" / agent)}
    log_dir = tmp_path / "log"
    bin_dir = user_home / ".local" / "bin"
    before = probes(workspace, outside, planted)
    if agent == "claude":
        prompt, looks_right = acp_server(bin_dir, log_dir, before)
    else:
        prompt, looks_right = nested_server(bin_dir, log_dir, before, scv_home)
    (scv_home / "config.toml").write_text(f'[tools]\nsandbox = "workspace-write"\nsandbox_writable = ["{log_dir}"]\n')
    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    agents = open_agent_session(ctx.config, scv_home_path())
    try:
        assert agents.offered[agent].transport == ("acp" if agent == "claude" else "scv")
        runner = ToolRunner(supervisor, build_registry(ctx, Services(agents=agents)), ctx, approve_all)
        prepared = runner.prepare("agent", {"agent": agent, "prompt": prompt})
        assert "In SCV's sandbox: workspace-write, no network, with its own home writable." in prepared.summary
        first = runner.run(prepared)
        assert first.ok, first.value
        assert looks_right(first.value["reply"]) and first.value["sandbox"] == {"mode": "workspace-write",
                                                                                "network": False}
        home = scv_home / "agents" / agent
        assert (home / "notes").read_text() == "kept\n" and (home / "refused").read_text() == "refused\n"
        assert (workspace / "from-agent").read_text() == "made\n"
        assert list(outside.iterdir()) == []
        assert (home / "read").read_text() == ""            # no planted secret was readable
        assert (home / "status").read_text().split() == ["NoNewPrivs:", "1"]
        tmpdir = (home / "tmpdir").read_text()
        assert "scv-sandbox-" in tmpdir and os.path.isdir(tmpdir)
        # A later turn runs on the same, still confined, process.
        second = runner.run(runner.prepare("agent", {"session": first.value["session"], "prompt": prompt}))
        assert second.ok and looks_right(second.value["reply"]) and second.value["sandbox"]["mode"] == "workspace-write"
        assert second.value["reply"] != first.value["reply"]
    finally:
        agents.close()
    # The conversation ended: its process, and the temporary folder it ran with, are gone.
    assert not os.path.exists(tmpdir)
