"""The sandbox on a kernel that offers less, through real workers: the supervisor is shown a
kernel without mount or network namespaces, without CAP_SYS_ADMIN, with a lower Landlock ABI or
with no Landlock at all, and the call either runs under the fallback (secrets hidden by Landlock
rules alone, the worker in its own user namespace, TCP blocked by Landlock) or is refused with a
sentence naming the missing feature. Never unsandboxed."""

import os

import pytest

from scv.core.errors import RefusedError
from tests.sandbox_fakes import (PYTHON, SUPPORT, LoopbackTcp, LoopbackUdp, abi_at_least, bash, needs_landlock,
                                 needs_mount_namespace, needs_network_namespace, plant_secrets, sandbox_config,
                                 tcp_connect, udp_query, with_support)

pytestmark = needs_landlock


def test_without_a_mount_namespace_landlock_rules_alone_hide_the_secrets(make_runner, monkeypatch, tmp_path,
                                                                          scv_home, workspace):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    planted = plant_secrets(home, scv_home)
    (home / "notes.txt").write_text("fine\n")
    with_support(monkeypatch, mount_namespace=False, mount_namespace_error="a private mount namespace cannot be made")
    runner = make_runner(sandbox_config(fallback="landlock-only"))
    ok, value = bash(runner, " ; ".join(f"cat {path}" for path in planted.values()) + f" ; cat {home}/notes.txt"
                     " ; cat /etc/shadow ; echo x > inside && cat inside ; true")
    assert ok, value
    for word in planted:
        assert word not in value["output"]
    assert value["output"].count("Permission denied") >= len(planted) + 1     # each secret and /etc/shadow
    assert "fine\n" in value["output"] and "x\n" in value["output"]
    report = runner.prepare("bash", {"command": "true"})
    assert report.summary.endswith("sandbox: workspace-write, no network")


def test_without_a_mount_namespace_the_call_is_refused_unless_the_user_allows_landlock_only(make_runner, monkeypatch):
    with_support(monkeypatch, mount_namespace=False, user_namespace=False, cap_sys_admin=False,
                 user_namespace_error="user namespaces are not allowed here (Operation not permitted)")
    with pytest.raises(RefusedError, match=r"needs a private mount namespace \(to hide the secret folders and keep "
                                           r"files outside the writable folders read-only\), and user namespaces are "
                                           r"not allowed here .*tools.sandbox_fallback = \"landlock-only\""):
        make_runner(sandbox_config(network=True)).prepare("bash", {"command": "true"})
    ok, value = bash(make_runner(sandbox_config(network=True, fallback="landlock-only")), "echo fine")
    assert ok and value["output"] == "fine\n"


def test_rules_alone_cannot_hide_a_secret_inside_the_workspace_so_the_call_is_refused(make_runner, monkeypatch,
                                                                                        workspace):
    monkeypatch.setenv("HOME", str(workspace))
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh" / "id_rsa").write_text("SECRET\n")
    with_support(monkeypatch, mount_namespace=False)
    with pytest.raises(RefusedError, match=r"cannot keep .*\.ssh unreadable inside the writable folder"):
        make_runner(sandbox_config(fallback="landlock-only")).prepare("bash", {"command": "true"})


@needs_mount_namespace
def test_with_a_mount_namespace_a_secret_inside_the_workspace_is_hidden_and_read_only(make_runner, monkeypatch,
                                                                                       workspace):
    monkeypatch.setenv("HOME", str(workspace))
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh" / "id_rsa").write_text("SECRET\n")
    ok, value = bash(make_runner(sandbox_config()), "cat .ssh/id_rsa ; echo key > .ssh/authorized_keys ; "
                                                    "echo other > notes && cat notes")
    assert "SECRET" not in value["output"] and "other" in value["output"]
    assert "Read-only file system" in value["output"] or "Permission denied" in value["output"]
    assert sorted(os.listdir(workspace / ".ssh")) == ["id_rsa"]


@needs_mount_namespace
def test_without_cap_sys_admin_the_worker_enters_its_own_user_namespace(make_runner, monkeypatch, tmp_path,
                                                                         scv_home):
    if not SUPPORT.cap_sys_admin:
        pytest.skip("this process has no CAP_SYS_ADMIN: the user-namespace path is the normal one here")
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    planted = plant_secrets(home, scv_home)
    outside = tmp_path / "outside"
    outside.mkdir()
    tcp = LoopbackTcp()
    try:
        with_support(monkeypatch, cap_sys_admin=False, user_namespace=True)
        runner = make_runner(sandbox_config())
        ok, value = bash(runner, "cat /proc/self/uid_map ; echo in > inside ; cat inside ; "
                                 f"echo x > {outside}/f ; cat {planted['SECRET-SSH']} ; {tcp_connect(tcp.port)} ; true")
        assert ok, value
        uid = os.getuid()
        assert value["output"].split()[:3] == [str(uid), str(uid), "1"]    # the worker's own mapping
        assert "in\n" in value["output"] and "Permission denied" in value["output"]
        assert "SECRET-SSH" not in value["output"] and tcp.lines == []
        assert list(outside.iterdir()) == []
    finally:
        tcp.close()


@abi_at_least(4)
def test_without_a_network_namespace_landlock_blocks_tcp_and_seccomp_the_other_sockets(make_runner, monkeypatch):
    tcp, udp = LoopbackTcp(), LoopbackUdp()
    try:
        with_support(monkeypatch, network_namespace=False,
                     network_namespace_error="a network namespace cannot be made here (Operation not permitted)")
        with pytest.raises(RefusedError, match=r"needs a network namespace \(tools.sandbox_network = false\), and a "
                                               r"network namespace cannot be made here"):
            make_runner(sandbox_config()).prepare("bash", {"command": "true"})
        runner = make_runner(sandbox_config(fallback="landlock-only"))
        prepared = runner.prepare("bash", {"command": "true"})
        assert prepared.summary.endswith("sandbox: workspace-write, no network (Landlock and seccomp: no network "
                                         "namespace)")
        ok, value = bash(runner, tcp_connect(tcp.port))
        assert not ok and "Permission denied" in value["output"] and tcp.lines == []
        ok, value = bash(runner, udp_query(udp.port))
        assert not ok and "Permission denied" in value["output"] and udp.seen == 0
        ok, value = bash(runner, f"{PYTHON} -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\"")
        assert not ok and "Permission denied" in value["output"]
    finally:
        tcp.close()
        udp.close()


def test_without_landlock_the_call_is_refused_before_any_worker(make_runner, monkeypatch):
    with_support(monkeypatch, landlock_abi=0, landlock_error="this kernel has no Landlock (it needs Linux 5.13 or "
                                                             "later built with CONFIG_SECURITY_LANDLOCK)")
    runner = make_runner(sandbox_config())
    with pytest.raises(RefusedError, match=r"needs Landlock, and this kernel has no Landlock .*the call was not run"):
        runner.prepare("bash", {"command": "true"})


def test_no_network_without_a_namespace_or_landlock_tcp_is_refused(make_runner, monkeypatch):
    with_support(monkeypatch, landlock_abi=3, network_namespace=False,
                 network_namespace_error="a network namespace cannot be made here (Operation not permitted)")
    with pytest.raises(RefusedError, match=r"needs a network namespace or Landlock ABI 4, and this kernel has "
                                           r"neither \(a network namespace cannot be made here"):
        make_runner(sandbox_config(fallback="landlock-only")).prepare("bash", {"command": "true"})
    # The same kernel still sandboxes a call that may use the network.
    ok, value = bash(make_runner(sandbox_config(network=True)), "echo fine")
    assert ok and value["output"] == "fine\n"


@needs_network_namespace
def test_landlock_abi_1_drops_refer_so_links_between_folders_fail(make_runner, monkeypatch, workspace):
    with_support(monkeypatch, landlock_abi=1)
    runner = make_runner(sandbox_config())
    # (mv would fall back to copying: a hard link shows the refusal itself.)
    ok, value = bash(runner, "mkdir a b && echo x > a/f && ln a/f a/g && echo linked && ln a/f b/g")
    assert not ok and "linked" in value["output"] and "Invalid cross-device link" in value["output"]
    assert (workspace / "a" / "g").exists() and not (workspace / "b" / "g").exists()
    monkeypatch.undo()
    ok, value = bash(make_runner(sandbox_config()), "ln a/f b/g")     # this kernel's own ABI allows it
    assert ok == (SUPPORT.landlock_abi >= 2), value
