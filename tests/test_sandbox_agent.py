"""Delegated agents in the OS sandbox: a fake agent CLI (run through bash by the committed
launcher) writes its private home and the workspace but nothing else, reads none of the user's
or the other agents' secrets, and an agent's own table can exempt it."""

import pytest

from tests.agent_fakes import install, on_cli
from tests.sandbox_fakes import needs_landlock, plant_secrets

pytestmark = needs_landlock


@pytest.fixture
def grok(tmp_path, monkeypatch, scv_home):
    user_home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    fake = install(user_home / ".local" / "bin", "grok", tmp_path / "log" / "grok")
    (scv_home / "agents" / "grok" / ".grok").mkdir(parents=True)
    (scv_home / "agents" / "grok" / ".grok" / "auth.json").write_text('{"token": "x"}')
    return fake


@pytest.fixture
def outside(tmp_path):
    place = tmp_path / "outside"
    place.mkdir()
    return place


def _config(scv_home, log_dir, extra: str = "") -> None:
    # The fake records its argv and environment in its log folder: an extra writable folder.
    (scv_home / "config.toml").write_text(on_cli(f'[tools]\nsandbox = "workspace-write"\n'
                                                 f'sandbox_writable = ["{log_dir}"]\n' + extra))


def call(runner, raw: dict) -> tuple[bool, dict]:
    result = runner.run(runner.prepare("agent", raw))
    return result.ok, result.value


def test_an_agent_cli_is_sandboxed_with_its_home_writable(grok, make_runner, scv_home, workspace, outside, tmp_path):
    planted = plant_secrets(tmp_path / "user", scv_home)
    _config(scv_home, grok.log_dir)
    reads = " ; ".join(f"cat {path} 2>/dev/null" for path in planted.values())
    grok.write(f"echo kept > \"$HOME/.grok/notes\"\necho made > {workspace}/from-agent\n"
               f"echo x > {outside}/escape 2>&1 || echo 'outside refused'\n{reads}\n"
               f"grep NoNewPrivs /proc/self/status\necho done\n")
    runner = make_runner()
    prepared = runner.prepare("agent", {"agent": "grok", "prompt": "work"})
    assert "In SCV's sandbox: workspace-write, no network, with its own home writable." in prepared.summary
    ok, value = call(runner, {"agent": "grok", "prompt": "work"})
    assert ok, value
    assert "outside refused" in value["reply"] and "NoNewPrivs:\t1" in value["reply"]
    assert value["reply"].rstrip().endswith("done")
    for word in planted:                        # SECRET-AGENT sits in another agent's home (claude)
        assert word not in value["reply"]
    assert (scv_home / "agents" / "grok" / ".grok" / "notes").read_text() == "kept\n"
    assert (workspace / "from-agent").read_text() == "made\n"
    assert list(outside.iterdir()) == []
    # The refused write's error (the read-only mount's) reached the agent's stderr.
    assert value["sandbox"] == {"mode": "workspace-write", "network": False, "denied": True}
    assert "Read-only file system" in value["stderr_tail"]
    assert grok.env()["TMPDIR"].startswith("/") and "scv-sandbox-" in grok.env()["TMPDIR"]


def test_an_agents_own_table_exempts_it(grok, make_runner, scv_home, outside):
    _config(scv_home, grok.log_dir, '[agents.grok]\nsandbox = "off"\n')
    grok.write(f"echo x > {outside}/allowed && echo wrote\n")
    runner = make_runner()
    assert "sandbox" not in runner.prepare("agent", {"agent": "grok", "prompt": "go"}).summary
    ok, value = call(runner, {"agent": "grok", "prompt": "go"})
    assert ok and value["reply"] == "wrote\n" and "sandbox" not in value
    assert (outside / "allowed").read_text() == "x\n"


def test_an_agent_may_get_the_network_while_bash_has_none(grok, make_runner, scv_home):
    _config(scv_home, grok.log_dir, '[agents.grok]\nsandbox_network = true\n')
    grok.write("echo ran\n")
    runner = make_runner()
    assert "sandbox: workspace-write, network allowed" in runner.prepare("agent", {"agent": "grok",
                                                                                  "prompt": "go"}).summary
    assert runner.prepare("bash", {"command": "true"}).summary.endswith("sandbox: workspace-write, no network")
    ok, value = call(runner, {"agent": "grok", "prompt": "go"})
    assert ok and value["sandbox"] == {"mode": "workspace-write", "network": True}
