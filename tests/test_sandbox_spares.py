"""Issue 24's cost: a spare worker readied for sandboxed calls (its thread already in the mount
and network namespaces, the mounts read-only, its /proc entries hidden) takes the next sandboxed
call, and never an unsandboxed one; a run of mixed calls, each checked through a real `bash`."""

import os

import pytest

from scv.oscalls import REAL
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
