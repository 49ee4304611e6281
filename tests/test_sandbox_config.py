"""The sandbox's configuration keys: plain typed fields, extra writable folders checked with an
error naming the file and the key, projects that may only tighten, and what `scv tools --json`
and `scv sandbox check` report."""

import json
import os

import pytest

from scv.config.load import load_config
from scv.core.errors import ConfigError
from scv.sandbox.report import call_report
from tests.conftest import run_scv, scv_env
from tests.sandbox_fakes import SUPPORT, needs_landlock, with_support


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults_keep_the_sandbox_off(workspace, scv_home):
    tools = load_config(workspace).tools
    assert (tools.sandbox, tools.sandbox_network, tools.sandbox_writable) == ("off", False, [])


def test_the_user_sets_the_sandbox_and_an_agent_its_own(workspace, scv_home, tmp_path):
    extra = tmp_path / "cache"
    extra.mkdir()
    write(scv_home / "config.toml", f'[tools]\nsandbox = "read-only"\nsandbox_network = true\n'
                                    f'sandbox_writable = ["{extra}"]\n[agents.codex]\nsandbox = "off"\n'
                                    '[agents.grok]\nsandbox_network = false\n')
    config = load_config(workspace)
    assert (config.tools.sandbox, config.tools.sandbox_network, config.tools.sandbox_writable) == \
        ("read-only", True, [str(extra)])
    assert config.agents["codex"].sandbox == "off" and config.agents["grok"].sandbox_network is False


@pytest.mark.parametrize("entry, expected", [
    ("relative/dir", "is relative; give the folder's absolute path"),
    ("{tmp}/missing", "does not exist; create the folder or remove the entry"),
    ("{tmp}/link", "goes through a symlink (it is {tmp}/real); name the real folder"),
    ("{tmp}/real/file", "is not a folder; name a folder"),
])
def test_a_bad_writable_folder_names_the_file_and_the_key(workspace, scv_home, tmp_path, entry, expected):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "file").write_text("")
    os.symlink(tmp_path / "real", tmp_path / "link")
    entry = entry.format(tmp=tmp_path)
    write(scv_home / "config.toml", f'[tools]\nsandbox = "workspace-write"\nsandbox_writable = ["/", "{entry}"]\n')
    with pytest.raises(ConfigError) as err:
        load_config(workspace)
    assert str(err.value) == (f"{scv_home / 'config.toml'}: tools.sandbox_writable[1] {entry!r} "
                              + expected.format(tmp=tmp_path))


@pytest.mark.parametrize("text, expected", [
    ('[tools]\nsandbox = "everything"\n', "key tools.sandbox"),
    ('[tools]\nsandbox_network = "yes"\n', "key tools.sandbox_network"),
    ('[agents.codex]\nsandbox = "none"\n', "key agents.codex.sandbox"),
])
def test_bad_values_name_the_key(workspace, scv_home, text, expected):
    write(scv_home / "config.toml", text)
    with pytest.raises(ConfigError, match=expected):
        load_config(workspace)


def test_a_project_may_only_tighten_the_sandbox(workspace, scv_home, tmp_path):
    project = workspace / ".scv/config.toml"
    write(project, '[tools]\nsandbox = "workspace-write"\nsandbox_network = false\n')
    assert load_config(workspace).tools.sandbox == "workspace-write"
    write(scv_home / "config.toml", '[tools]\nsandbox = "read-only"\nsandbox_network = true\n')
    with pytest.raises(ConfigError, match=r"may only tighten tools.sandbox \(the user's is \"read-only\"\)"):
        load_config(workspace)
    write(project, '[tools]\nsandbox = "read-only"\nsandbox_network = false\n')
    config = load_config(workspace)
    assert (config.tools.sandbox, config.tools.sandbox_network) == ("read-only", False)
    write(scv_home / "config.toml", "")
    write(project, '[tools]\nsandbox_network = true\n')
    with pytest.raises(ConfigError, match="may only turn tools.sandbox_network off"):
        load_config(workspace)
    write(project, f'[tools]\nsandbox_writable = ["{tmp_path}"]\n')
    with pytest.raises(ConfigError, match="tools.sandbox_writable may not be set by a project config"):
        load_config(workspace)
    write(project, '[agents.codex]\nsandbox = "off"\n')
    with pytest.raises(ConfigError, match="may not be set by a project config"):
        load_config(workspace)


def test_scv_tools_json_reports_the_mode_and_the_kernel(scv_home, workspace):
    write(scv_home / "config.toml", '[tools]\nsandbox = "workspace-write"\n[agents.codex]\nsandbox = "off"\n')
    proc = run_scv("tools", "--json", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sandbox"]["mode"] == "workspace-write" and out["sandbox"]["network"] is False
    assert out["sandbox"]["agents"] == {"codex": {"mode": "off", "network": False}}
    assert out["sandbox"]["kernel"]["landlock_abi"] == SUPPORT.landlock_abi
    bash = next(tool for tool in out["tools"] if tool["name"] == "bash")
    assert bash["sandbox"] == {"mode": "workspace-write", "network": False}
    assert "Sandboxed (workspace-write)" in bash["description"] and "Not sandboxed" not in bash["description"]


@needs_landlock
def test_scv_sandbox_check_prints_what_a_call_gets(scv_home, workspace, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    write(scv_home / "config.toml", '[tools]\nsandbox = "workspace-write"\n')
    env = scv_env(HOME=str(home))
    proc = run_scv("sandbox", "check", "-C", str(workspace), env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Landlock:           ABI {SUPPORT.landlock_abi}"
    assert any(line.startswith("network namespace:  ") for line in lines)
    assert "a bash call gets:" in lines
    assert "  mode:             workspace-write, no network" in lines
    assert f"  writable:         {workspace}" in lines
    assert f"                    {home}/.ssh" in lines or f"  unreadable:       {home}/.ssh" in lines
    as_json = json.loads(run_scv("sandbox", "check", "--json", "-C", str(workspace), env=env).stdout)
    assert as_json["kernel"]["landlock_abi"] == SUPPORT.landlock_abi
    call = as_json["call"]
    assert call["sandboxed"] is True and call["mode"] == "workspace-write"
    assert str(workspace) in call["writable"] and f"{home}/.ssh" in call["hidden"]
    assert call["landlock"]["abi"] == SUPPORT.landlock_abi and "write_file" in call["landlock"]["handled_fs"]
    agent = json.loads(run_scv("sandbox", "check", "--json", "--agent", "codex", "-C", str(workspace),
                               env=env).stdout)["call"]
    assert agent["tool"] == "agent codex" and any(str(scv_home / "agents" / "codex") in w for w in agent["writable"])


def test_scv_sandbox_check_previews_when_off(scv_home, workspace):
    proc = run_scv("sandbox", "check", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    assert 'tools.sandbox = "off"' in proc.stdout
    assert 'a bash call runs without a sandbox; with sandbox = "workspace-write" it would get:' in proc.stdout


def test_the_report_lists_what_a_lower_abi_drops_and_a_refusal(monkeypatch, workspace, scv_home):
    write(scv_home / "config.toml", '[tools]\nsandbox = "read-only"\n')
    config = load_config(workspace)
    with_support(monkeypatch, landlock_abi=2, network_namespace=False, mount_namespace=False,
                 mount_namespace_error="a private mount namespace cannot be made here (Operation not permitted)",
                 network_namespace_error="a network namespace cannot be made here (Operation not permitted)")
    report = call_report(config, workspace)
    assert report["tier"] == "refused"
    assert report["refused"].startswith('the sandbox (tools.sandbox = "read-only") needs a private mount namespace')
    assert 'tools.sandbox_fallback = "landlock-only"' in report["refused"]
    fallback = '[tools]\nsandbox = "read-only"\nsandbox_fallback = "landlock-only"\n'
    write(scv_home / "config.toml", fallback)
    report = call_report(load_config(workspace), workspace)
    assert report["refused"].startswith("the sandbox's network block (tools.sandbox_network = false) needs a "
                                        "network namespace or Landlock ABI 4")
    write(scv_home / "config.toml", fallback + "sandbox_network = true\n")
    report = call_report(load_config(workspace), workspace)
    dropped = " | ".join(report["dropped"])
    assert "truncate(2)" in dropped and "ioctl on device files" in dropped and "signals" in dropped
    assert "chmod, touch -d, chown, setxattr" in dropped and report["hide_with"] == "rules"
    assert report["tier"] == "landlock-only"
    assert report["landlock"]["handled_fs"][-1] == "refer"
