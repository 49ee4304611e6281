"""`bash` in the OS sandbox, through real workers on this kernel: writes outside the workspace
refused by every route, writes inside working, the private TMPDIR, secrets unreadable, the
network blocked (TCP, UDP, DNS, loopback included) or allowed, and the sandbox inherited by a
`setsid` grandchild. Each test skips, saying why, where this kernel lacks what it needs."""

import os
import tempfile

import pytest

from scv.config.load import Config
from scv.core.errors import RefusedError
from tests.fakes import wait_for
from tests.sandbox_fakes import (PYTHON, SUPPORT, LoopbackTcp, LoopbackUdp, abi_at_least, bash, needs_landlock,
                                 needs_network_namespace, plant_secrets, sandbox_config, tcp_connect, udp_query)

pytestmark = needs_landlock


@pytest.fixture
def outside(tmp_path):
    place = tmp_path / "outside"
    place.mkdir()
    (place / "victim").write_text("original\n")
    return place


def _untouched(outside) -> None:
    assert sorted(os.listdir(outside)) == ["victim"]
    assert (outside / "victim").read_text() == "original\n"


def test_writes_outside_the_workspace_are_refused_by_every_route(make_runner, workspace, outside):
    runner = make_runner(sandbox_config())
    routes = {
        "absolute": f"echo x > {outside}/new",
        "append": f"echo x >> {outside}/victim",
        "dotdot": "echo x > ../outside/new",
        "symlink": f"ln -s {outside} link && echo x > link/new",
        "hardlink-in": f"ln {outside}/victim hard",
        "hardlink-out": f"echo y > mine && ln mine {outside}/mine",
        "rename-out": f"echo y > moving && mv moving {outside}/moved",
        "proc-root": f"echo x > /proc/self/root{outside}/new",
        "truncate": f"truncate -s 0 {outside}/victim",
        "mkdir": f"mkdir {outside}/folder",
        "remove": f"rm -f {outside}/victim",
        "python": f"{PYTHON} -c \"open('{outside}/py', 'w')\"",
    }
    seen = {}
    for name, command in routes.items():
        ok, value = bash(runner, command)
        seen[name] = value
        assert not ok and value["exit_code"] != 0, (name, value)
        assert value["sandbox"]["mode"] == "workspace-write"
        assert any(word in value["output"] for word in ("Permission denied", "cross-device", "Read-only")), (name, value)
        _untouched(outside)
    # The link itself is made inside; only the write through it fails.
    assert os.path.islink(workspace / "link"), seen["symlink"]


def test_writes_inside_the_workspace_work_and_are_not_flagged(make_runner, workspace):
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, "mkdir -p a/b && echo one > a/b/f && mv a/b/f a/g && ln a/g a/h && ln -s g a/s "
                             "&& truncate -s 2 a/h && rm -r a/b && cat a/s")
    assert ok, value
    assert value["output"].endswith("on")
    assert value["sandbox"] == {"mode": "workspace-write", "network": False}
    assert sorted(os.listdir(workspace / "a")) == ["g", "h", "s"]


def test_read_only_writes_only_its_temporary_folder(make_runner, workspace):
    (workspace / "readme").write_text("words\n")
    runner = make_runner(sandbox_config("read-only"))
    ok, value = bash(runner, "cat readme && echo x > $TMPDIR/scratch && cat $TMPDIR/scratch")
    assert ok, value
    assert value["output"] == "words\nx\n"
    ok, value = bash(runner, "echo x > made")
    assert not ok and "Read-only file system" in value["output"]      # the mount, before Landlock
    assert value["sandbox"] == {"mode": "read-only", "network": False, "denied": True}
    assert not (workspace / "made").exists()


def test_the_private_tmpdir_works_and_is_removed(make_runner):
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, "echo $TMPDIR && mkdir $TMPDIR/d && echo x > $TMPDIR/d/f && chmod 000 $TMPDIR/d "
                             "&& mktemp && (sleep 30 > $TMPDIR/held &) ; true")
    assert ok, value
    tmpdir, made = value["output"].splitlines()[:2]
    assert tmpdir.startswith(os.path.join(tempfile.gettempdir(), "scv-sandbox-"))
    assert made.startswith(tmpdir + "/")            # mktemp honours TMPDIR
    # Removed once the result is sent, before the worker exits, even with a locked folder and a
    # child holding a file.
    assert wait_for(lambda: not os.path.exists(tmpdir))
    ok, again = bash(runner, "echo $TMPDIR")
    assert again["output"].strip() != tmpdir        # a new one per call


def test_extra_writable_folders(make_runner, tmp_path):
    extra = tmp_path / "cache"
    extra.mkdir()
    ok, value = bash(make_runner(sandbox_config(writable=[extra])), f"echo x > {extra}/f")
    assert ok, value
    assert (extra / "f").read_text() == "x\n"
    ok, value = bash(make_runner(sandbox_config("read-only", writable=[extra])), f"echo x > {extra}/g")
    assert not ok and not (extra / "g").exists()    # read-only writes nowhere but its TMPDIR


def test_secret_locations_are_unreadable(make_runner, workspace, tmp_path, scv_home, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    planted = plant_secrets(home, scv_home)
    runner = make_runner(sandbox_config())
    reads = " ; ".join([*(f"cat {path}" for path in planted.values()), f"ls -R {home}/.ssh",
                        f"cp {planted['SECRET-SSH']} stolen", f"cat /proc/$PPID/environ", "cat /etc/shadow"])
    ok, value = bash(runner, reads + " ; true")
    assert ok, value
    for word in planted:
        assert word not in value["output"]
    listed = [line for line in value["output"].splitlines() if not line.startswith(("cat:", "cp:", "ls:"))]
    assert not any("id_ed25519" in line for line in listed), value["output"]
    assert not (workspace / "stolen").exists() or (workspace / "stolen").read_text() == ""
    # The worker's environment (SCV's own, before an agent's was cleaned) is out of reach too.
    proc_line = next(line for line in value["output"].splitlines() if "/environ" in line)
    assert "No such file" in proc_line or "Permission denied" in proc_line
    # The user's other files stay readable.
    (home / "notes.txt").write_text("fine\n")
    ok, value = bash(runner, f"cat {home}/notes.txt")
    assert ok and value["output"] == "fine\n"


@needs_network_namespace
def test_no_network_refuses_loopback_tcp_udp_and_dns(make_runner):
    tcp, udp = LoopbackTcp(), LoopbackUdp()
    try:
        runner = make_runner(sandbox_config(network=False))
        ok, value = bash(runner, tcp_connect(tcp.port))
        assert not ok and "from-sandbox" not in str(tcp.lines), value
        assert value["sandbox"]["denied"] is True
        ok, value = bash(runner, f"curl -sS --max-time 5 http://127.0.0.1:{tcp.port}/")
        assert not ok and "hello" not in value["output"]
        ok, value = bash(runner, f"{PYTHON} -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
                                 "s.listen(); print('listening')\"")
        assert not ok and "listening" not in value["output"]
        ok, value = bash(runner, udp_query(udp.port))
        assert not ok and "answered" not in value["output"]
        ok, value = bash(runner, f"{PYTHON} -c \"import socket; print(socket.getaddrinfo('example.com', 80))\"")
        assert not ok and "gaierror" in value["output"]
        assert tcp.lines == [] and udp.seen == 0
    finally:
        tcp.close()
        udp.close()


def test_network_on_reaches_the_loopback_server(make_runner):
    tcp, udp = LoopbackTcp(), LoopbackUdp()
    try:
        runner = make_runner(sandbox_config(network=True))
        ok, value = bash(runner, tcp_connect(tcp.port))
        assert ok, value
        assert "hello" in value["output"] and tcp.lines == [b"from-sandbox"]
        ok, value = bash(runner, udp_query(udp.port))
        assert ok and "answered" in value["output"]
        assert value["sandbox"] == {"mode": "workspace-write", "network": True}
    finally:
        tcp.close()
        udp.close()


def test_a_setsid_grandchild_inherits_the_sandbox(make_runner, outside):
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, f"setsid -w bash -c 'echo sid=$(ps -o sid= -p $$); grep NoNewPrivs /proc/self/status; "
                             f"echo x > {outside}/late' ; echo leader=$(ps -o sid= -p $$)")
    assert "Read-only file system" in value["output"], value
    assert "NoNewPrivs:\t1" in value["output"]
    sids = dict(line.replace(" ", "").split("=") for line in value["output"].splitlines() if "id=" in line
                or line.startswith("leader="))
    assert sids["sid"] != sids["leader"]              # it really left the command's session
    _untouched(outside)


@abi_at_least(6)
def test_the_command_cannot_signal_the_worker(make_runner):
    ok, value = bash(make_runner(sandbox_config()), "kill -0 $PPID")
    assert not ok and "Operation not permitted" in value["output"]


def test_the_approval_summary_names_the_sandbox_and_the_model_cannot_change_it(make_runner):
    runner = make_runner(sandbox_config())
    prepared = runner.prepare("bash", {"command": "true"})
    assert prepared.summary.endswith("; sandbox: workspace-write, no network")
    with pytest.raises(RefusedError, match="no argument 'sandbox'"):
        runner.prepare("bash", {"command": "true", "sandbox": "off"})
    off = make_runner(Config()).prepare("bash", {"command": "true"})
    assert "sandbox" not in off.summary


def test_the_worker_keeps_its_rights_after_a_sandboxed_call(make_runner, outside):
    ok, value = bash(make_runner(sandbox_config()), f"echo x > {outside}/a")
    assert not ok
    ok, value = bash(make_runner(Config()), f"echo x > {outside}/a && cat /proc/self/status | grep NoNewPrivs")
    assert ok and "NoNewPrivs:\t0" in value["output"] and "sandbox" not in value
    assert (outside / "a").read_text() == "x\n"


def test_no_way_around_through_devices_capabilities_or_scv_processes(make_runner, workspace):
    disks = sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []
    disk = next((f"/dev/{name}" for name in disks if os.path.exists(f"/dev/{name}")), None)
    runner = make_runner(sandbox_config())
    reads = f"head -c 1 {disk} > /dev/null ; " if disk else ""
    ok, value = bash(runner, f"{reads}head -c 1 /dev/mem ; mknod node c 1 3 ; mkfifo pipe && echo fifo-made ; "
                             f"cat /proc/{os.getpid()}/environ ; grep CapBnd /proc/self/status ; "
                             "head -c 4 /dev/urandom | wc -c ; echo ok > /dev/null && echo devnull-ok")
    out = value["output"]
    if disk:
        assert f"{disk}' for reading: Permission denied" in out      # a raw disk would show what is hidden
    assert not (workspace / "node").exists() and "fifo-made" in out   # no device nodes; other files are fine
    assert "devnull-ok" in out and "\n4\n" in out
    environ = next(line for line in out.splitlines() if "/environ" in line)      # SCV's own process
    assert "No such file" in environ or "Permission denied" in environ
    bounding = int(next(line for line in out.splitlines() if line.startswith("CapBnd")).split()[1], 16)
    if os.geteuid() != 0 and not SUPPORT.user_namespace:
        return      # an unprivileged command without a user namespace has no capabilities to drop
    for capability in (2, 16, 17, 19, 21, 27):   # dac_read_search sys_module sys_rawio sys_ptrace sys_admin mknod
        assert not bounding >> capability & 1, capability
