"""Issue 24's cost: a spare worker readied for sandboxed calls (its thread already in the mount
and network namespaces, the mounts read-only, its /proc entries hidden) takes the next sandboxed
call, and never an unsandboxed one; a run of mixed calls, each checked through a real `bash`."""

import os

import pytest

from scv.core.oscalls import REAL
from tests.fakes import wait_for
from tests.sandbox_fakes import (SUPPORT, bash, needs_landlock, needs_mount_namespace, needs_network_namespace,
                                 sandbox_config, with_support)

pytestmark = [needs_landlock, needs_mount_namespace, needs_network_namespace]
FULL_MAP = "0 0 4294967295"


def _namespaced_spares(fork_point: int) -> list[int]:
    """The fork point's children with a thread in another mount namespace than their own."""
    found = []
    for pid in REAL.children(fork_point):
        try:
            own = os.readlink(f"/proc/{pid}/ns/mnt")
            threads = [os.readlink(f"/proc/{pid}/task/{tid}/ns/mnt") for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        if any(ns != own for ns in threads):
            found.append(pid)
    return found


@pytest.mark.parametrize("user_namespace", [False, True])
def test_readied_spares_serve_sandboxed_calls_and_never_plain_ones(make_runner, supervisor, monkeypatch, tmp_path,
                                                                    user_namespace):
    if user_namespace and SUPPORT.cap_sys_admin:
        with_support(monkeypatch, cap_sys_admin=False, user_namespace=True)     # the unprivileged path
    elif user_namespace != (not SUPPORT.cap_sys_admin):
        pytest.skip("this process's privileges decide whether the worker uses a user namespace")
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("x\n")
    victim.chmod(0o644)
    boxed, plain = make_runner(sandbox_config()), make_runner()
    probe = f"cat /proc/self/uid_map ; chmod 600 {victim} ; ls /proc/$PPID/environ"
    for index, sandboxed in enumerate([True, True, False, True, True, False, False, True]):
        ok, value = bash(boxed if sandboxed else plain, probe)
        out = value["output"]
        if sandboxed:
            assert "Read-only file system" in out and "No such file" in out, (index, out)
            assert oct(victim.stat().st_mode & 0o777) == oct(0o644)
            assert (out.split()[:3] == [str(os.getuid())] * 2 + ["1"]) == user_namespace, (index, out)
        else:
            assert ok and " ".join(out.split()[:3]) == FULL_MAP and "environ" in out, (index, out)
            victim.chmod(0o644)
        if index == 1:
            # After sandboxed calls, a spare waits with its namespaces made.
            assert wait_for(lambda: _namespaced_spares(supervisor.fork_point_pid))


def _spare_hiding(fork_point: int, path: str) -> bool:
    """Whether a spare's readied thread has its mount over `path` already."""
    for pid in _namespaced_spares(fork_point):
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/mountinfo") as fh:
                    if any(line.split()[4] == path for line in fh):
                        return True
            except OSError:
                continue
    return False


def test_a_secret_folder_made_again_after_a_spare_hid_it_stays_hidden(make_runner, supervisor, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("OLD-SECRET\n")
    monkeypatch.setenv("HOME", str(home))
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, f"cat {home}/.ssh/id_ed25519 ; true")
    assert "OLD-SECRET" not in value["output"]
    # The spare readied after that call has applied its plan (a mount over ~/.ssh) ahead.
    wait_for(lambda: _spare_hiding(supervisor.fork_point_pid, str(home / ".ssh")))
    (home / ".ssh" / "id_ed25519").unlink()
    (home / ".ssh").rmdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("NEW-SECRET\n")
    # Same plan, another folder: the spare's mount sits on the old one, so the call must not use it.
    ok, value = bash(runner, f"cat {home}/.ssh/id_ed25519 ; ls -a {home}/.ssh ; true")
    listed = value["output"].splitlines()[1:]
    assert "NEW-SECRET" not in value["output"] and "id_ed25519" not in listed, value


def test_a_workspace_made_again_after_a_spare_bound_it_stays_writable(make_runner, supervisor, workspace):
    runner = make_runner(sandbox_config())
    ok, value = bash(runner, "echo one > f && cat f")
    assert ok and value["output"] == "one\n"
    wait_for(lambda: _spare_hiding(supervisor.fork_point_pid, str(workspace)))
    (workspace / "f").unlink()
    workspace.rmdir()
    workspace.mkdir()
    ok, value = bash(runner, "echo two > f && cat f")
    assert ok and value["output"] == "two\n", value
    assert (workspace / "f").read_text() == "two\n"


# Run in a child of its own: the launcher's thread ends up sandboxed for good.
ARMED_WHILE_AHEAD = """
import os, sys, threading
import msgspec
from pathlib import Path
from scv.sandbox.choose import plan_for
from tests.sandbox_fakes import sandbox_config
from workers import sandbox_linux
from workers.sandbox_linux import Launcher, namespace_flags

workspace, tmpdir = Path(sys.argv[1]), sys.argv[2]
plan = plan_for(sandbox_config(), workspace)
plan = msgspec.convert(msgspec.to_builtins(plan), sandbox_linux.SandboxPlan)
armed = threading.Event()
hide_all = Launcher._hide_all
def hide_all_once_armed(self, hidden):
    armed.wait()                    # the ahead work resumes only once the call has armed
    hide_all(self, hidden)
Launcher._hide_all = hide_all_once_armed
launcher = Launcher(plan.user_namespace, namespace_flags(plan.hide_with, plan.network_with), plan)
assert launcher.fits(plan)
launcher.arm(plan, tmpdir)
armed.set()

def write_inside():
    try:
        (workspace / "made").write_text("x")
        return "written"
    except OSError as err:
        return err.strerror
print(launcher.spawn(write_inside))
"""


def test_a_call_armed_while_the_spare_still_readies_keeps_its_workspace_writable(workspace, tmp_path):
    """The call's arrival replaces the launcher's lists of roots while the spare's thread may still
    be making the plan's roots writable ahead (a loaded machine, calls back to back): the
    thread works from its own copy, so the workspace is never left read-only."""
    import subprocess
    import sys
    from tests.conftest import ROOT, scv_env
    tmpdir = tmp_path / "call-tmp"
    tmpdir.mkdir()
    proc = subprocess.run([sys.executable, "-c", ARMED_WHILE_AHEAD, str(workspace), str(tmpdir)], cwd=ROOT,
                          env=scv_env(), capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "written", proc.stdout + proc.stderr
    assert (workspace / "made").read_text() == "x"
