"""Issue 24's tiers where namespaces cannot be made, with `unshare` refused by a real seccomp
filter in the child process that runs `scv` (tests/no_unshare.py, as Docker's default profile
does): the call is refused naming the missing feature, unless the user's own config opts into
`tools.sandbox_fallback = "landlock-only"`, which a project file cannot set; that tier then runs
the call with Landlock and seccomp alone: secrets unreadable, TCP, UDP and UNIX sockets refused."""

import json
import subprocess
import sys

import pytest

from scv.config.load import load_config
from scv.core.errors import ConfigError
from tests.conftest import scv_env
from tests.sandbox_fakes import (PYTHON, LoopbackTcp, LoopbackUdp, abi_at_least, needs_landlock,
                                 plant_secrets, tcp_connect, udp_query)

pytestmark = [needs_landlock, abi_at_least(4)]


def _scv_without_unshare(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.no_unshare", sys.executable, "-m", "scv", *args],
                          capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)


def _user_config(scv_home, text: str) -> None:
    (scv_home / "config.toml").write_text("[tools]\nsandbox = \"workspace-write\"\n" + text)


def test_where_unshare_is_refused_the_call_is_refused_naming_the_missing_feature(scv_home, workspace):
    _user_config(scv_home, "")
    env = scv_env()
    check = _scv_without_unshare("sandbox", "check", "--json", "-C", str(workspace), env=env)
    report = json.loads(check.stdout)
    assert check.returncode == 1, check.stderr
    kernel = report["kernel"]
    if not kernel["cap_sys_admin"]:
        assert not kernel["user_namespace"] and "Operation not permitted" in kernel["user_namespace_error"]
    assert not kernel["mount_namespace"] and not kernel["network_namespace"]
    assert report["call"]["tier"] == "refused"
    assert report["call"]["refused"].startswith('the sandbox (tools.sandbox = "workspace-write") needs a private '
                                                "mount namespace")
    assert "a network namespace (tools.sandbox_network = false)" in report["call"]["refused"]
    assert set(report["tiers"]) == {"namespaces", "landlock-only", "refused"}
    assert any("chmod" in gap for gap in report["tiers"]["landlock-only"])
    ran = _scv_without_unshare("tool", "--auto-approve", "bash", '{"command": "echo ran > made"}', "-C", str(workspace), env=env)
    assert ran.returncode == 2 and "needs a private mount namespace" in ran.stdout + ran.stderr
    assert not (workspace / "made").exists()


def test_the_users_landlock_only_fallback_still_blocks_secrets_and_every_socket(scv_home, workspace, tmp_path):
    home = tmp_path / "home"
    planted = plant_secrets(home, scv_home)
    _user_config(scv_home, "sandbox_fallback = \"landlock-only\"\n")
    env = scv_env(HOME=str(home))
    check = json.loads(_scv_without_unshare("sandbox", "check", "--json", "-C", str(workspace), env=env).stdout)
    call = check["call"]
    assert call["tier"] == "landlock-only" and call["network_with"] == "landlock" and call["sockets"] == "tcp-only"
    assert call["hide_with"] == "rules" and any("chmod" in text for text in call["dropped"])
    tcp, udp = LoopbackTcp(), LoopbackUdp()
    outside = tmp_path / "outside"
    outside.mkdir()
    try:
        command = (f"cat {planted['SECRET-SSH']} ; {tcp_connect(tcp.port)} ; {udp_query(udp.port)} ; "
                   f"{PYTHON} -c \"import socket; socket.socket(socket.AF_UNIX)\" ; echo x > {outside}/f ; "
                   "echo in > inside && cat inside")
        ran = _scv_without_unshare("tool", "--auto-approve", "bash", json.dumps({"command": command}), "-C", str(workspace), env=env)
        result = json.loads(ran.stdout.splitlines()[-1])
        output = result["output"]
        assert "in\n" in output and "SECRET-SSH" not in output, result
        assert output.count("Permission denied") >= 5, output      # the secret, TCP, UDP, UNIX and the write
        assert tcp.lines == [] and udp.seen == 0 and list(outside.iterdir()) == []
    finally:
        tcp.close()
        udp.close()


def test_a_project_file_cannot_choose_the_fallback(scv_home, workspace):
    (workspace / ".scv").mkdir()
    (workspace / ".scv" / "config.toml").write_text("[tools]\nsandbox_fallback = \"landlock-only\"\n")
    with pytest.raises(ConfigError, match=r"tools.sandbox_fallback may not be set by a project config"):
        load_config(workspace)
    (scv_home / "config.toml").write_text("[tools]\nsandbox_fallback = \"landlock-only\"\n")
    assert load_config(workspace.parent).tools.sandbox_fallback == "landlock-only"
