"""The supervisor of `scv exec` is a child subreaper: when a worker dies, the processes its
delegated agent left behind re-parent to the supervisor rather than to init, and it collects
them once they exit (no zombies are left among its children)."""

import signal
import subprocess
import sys

import psutil

from tests.conftest import scv_env
from tests.delegation_fakes import fake_agent, records_in, tagged_with
from tests.fakes import setup_fake_home, wait_for, write_script


def test_a_dead_workers_descendants_reparent_to_the_supervisor_and_are_reaped(tmp_path, monkeypatch, workspace,
                                                                               scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    # TERM is ignored (and inherited as ignored), so they outlive the grace period of the stop.
    fake_agent(tmp_path, "codex", "trap '' TERM\nsleep 300 &\nsetsid sleep 300 &\nwait\n")
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "a", "tool": "agent", "args": {"agent": "codex", "prompt": "work"}}]},
                          {"text": "after"})
    proc = subprocess.Popen([sys.executable, "-m", "scv", "exec", "--script", str(script), "--auto-approve", "-C",
                             str(workspace)], env=scv_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    record = None
    try:
        record = wait_for(lambda: records_in(scv_home))[0]
        left = wait_for(lambda: [p for p in tagged_with(record["handle"])] if len(tagged_with(record["handle"])) >= 3
                        else None)
        worker = psutil.Process(record["pid"]).parent()
        agent = psutil.Process(record["pid"])
        # The supervisor is frozen while the worker dies, so it cannot stop (and collect) the
        # agent before the test sees where the agent went; the kernel re-parents it all the same.
        supervisor = psutil.Process(proc.pid)
        supervisor.send_signal(signal.SIGSTOP)
        try:
            worker.send_signal(signal.SIGKILL)
            # The agent re-parents to the supervisor (the worker was its subreaper; now the supervisor is).
            wait_for(lambda: agent.ppid() == proc.pid)
        finally:
            supervisor.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=30)
        assert "after" in out
        # Stopped (KILL after the grace) and collected by the supervisor: none left, not even a zombie.
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in left)
    finally:
        if proc.poll() is None:
            proc.kill()
        for leftover in tagged_with(record["handle"]) if record else []:
            leftover.kill()         # only this test's own processes


def test_collect_orphans_reaps_only_processes_outside_its_own_group(supervisor):
    own = subprocess.Popen(["true"])                                # a child of this process, in its group
    adopted = subprocess.Popen(["true"], process_group=0)           # as a re-parented descendant looks
    wait_for(lambda: psutil.Process(own.pid).status() == psutil.STATUS_ZOMBIE and
             psutil.Process(adopted.pid).status() == psutil.STATUS_ZOMBIE)
    assert supervisor.collect_orphans() == [adopted.pid]
    assert own.wait(20) == 0                         # still this process's to collect, with its status
