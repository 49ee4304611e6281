"""Orphans: an SCV process SIGKILLed mid-delegation leaves a record whose owner is gone; the next
`scv exec` stops every process tagged with it and removes the record. A PID that was reused by
an unrelated process (different start time) is never signalled. Markers of dead owners go."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil

from scv.core import files
from scv.core.delegations import processes, records
from scv.delegations.reconcile import live_marker_ids, reconcile
from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import fake_agent, kill_scv_tree, records_in, tagged_with
from tests.fakes import setup_fake_home, wait_for, write_script

ESCAPING_AGENT = "setsid sleep 300 &\nsleep 300 &\nwait\n"


def start_exec_with_delegation(tmp_path, workspace) -> subprocess.Popen:
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "a", "tool": "agent", "args": {"agent": "codex", "prompt": "work"}}]},
                          {"text": "done"})
    return subprocess.Popen([sys.executable, "-m", "scv", "exec", "--script", str(script), "--auto-approve",
                             "-C", str(workspace)], env=scv_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def trivial_exec(tmp_path, workspace) -> subprocess.CompletedProcess:
    script = write_script(tmp_path / "t.jsonl", {"text": "hello"})
    return run_scv("exec", "--script", str(script), "-C", str(workspace))


def test_sigkilled_scv_tree_leaves_orphans_the_next_exec_stops(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", ESCAPING_AGENT)
    proc = start_exec_with_delegation(tmp_path, workspace)
    handle = None
    try:
        record = wait_for(lambda: records_in(scv_home))[0]
        assert record["owner_pid"] == proc.pid
        handle = record["handle"]
        wait_for(lambda: len(tagged_with(handle)) >= 3)
        # Every SCV process at once (supervisor, fork point, workers): nothing is left to clean up.
        kill_scv_tree(proc.pid, handle)
        proc.wait(10)
        time.sleep(0.3)
        assert len(tagged_with(handle)) >= 3, "the agent and its escapee outlive the SCV processes"
        listed = json.loads(run_scv("agents", "ps", "--all", "--json").stdout)["delegations"]
        assert [(row["handle"], row["state"]) for row in listed] == [(handle, "orphan")]
        assert json.loads(run_scv("agents", "ps", "--json").stdout)["delegations"] == []
        done = trivial_exec(tmp_path, workspace)
        assert done.returncode == 0, done.stderr
        assert f"stopped 1 orphaned delegation(s): {handle}" in done.stderr
        wait_for(lambda: tagged_with(handle) == [])
        assert records_in(scv_home) == []
        status = json.loads(run_scv("status", "--json").stdout)
        assert status["orphans_stopped"] == 1 and status["orphans"] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        for leftover in tagged_with(handle) if handle else []:
            leftover.kill()         # only this test's own processes


def test_sigkilled_supervisor_alone_leaves_nothing_behind(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", ESCAPING_AGENT)
    proc = start_exec_with_delegation(tmp_path, workspace)
    record = wait_for(lambda: records_in(scv_home))[0]
    wait_for(lambda: len(tagged_with(record["handle"])) >= 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    done = trivial_exec(tmp_path, workspace)        # a new supervisor starts (and reconciles)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: tagged_with(record["handle"]) == [])
    wait_for(lambda: records_in(scv_home) == [])


def test_a_reused_pid_is_never_killed(scv_home):
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        started = processes.start_time(bystander.pid)
        dead_owner = subprocess.Popen(["true"])
        dead_owner.wait()
        base = dict(agent="codex", session="s-1", cwd="/", depth=1, started_unix=time.time())
        # The agent's PID now belongs to the bystander, which started at another time.
        records.write(scv_home, records.Record(handle="codex-aaaaaa", parent="i/s-1/codex-aaaaaa",
                                               pid=bystander.pid, pid_start=started - 1000, owner_pid=dead_owner.pid,
                                               owner_start=started - 5, **base))
        # The owner's PID is live (this process) but started at another time: still an orphan.
        records.write(scv_home, records.Record(handle="codex-bbbbbb", parent="i/s-1/codex-bbbbbb",
                                               pid=bystander.pid, pid_start=started - 1000, owner_pid=os.getpid(),
                                               owner_start=psutil.Process().create_time() - 1000, **base))
        # A live owner (PID and start time match): not an orphan, never signalled (its run has ended).
        records.write(scv_home, records.Record(handle="codex-cccccc", parent="i/s-1/codex-cccccc",
                                               pid=bystander.pid, pid_start=started - 1000, owner_pid=os.getpid(),
                                               owner_start=psutil.Process().create_time(), **base))
        listed = json.loads(run_scv("agents", "ps", "--all", "--json").stdout)["delegations"]
        assert sorted((row["handle"], row["state"]) for row in listed) == [
            ("codex-aaaaaa", "orphan"), ("codex-bbbbbb", "orphan"), ("codex-cccccc", "ended")]
        killed = run_scv("agents", "kill", "codex-cccccc", "--json")
        assert killed.returncode == 0
        assert json.loads(killed.stdout) == {"stopped": ["codex-cccccc"], "agent": "codex", "state": "ended",
                                             "signalled": 0}
        done = reconcile(scv_home)
        assert sorted(done.orphans) == ["codex-aaaaaa", "codex-bbbbbb"]
        assert bystander.poll() is None, "an unrelated process with a reused PID was signalled"
        assert records_in(scv_home) == []
    finally:
        bystander.kill()
        bystander.wait()


def test_a_live_owners_record_stays_while_its_agent_runs_and_goes_once_nothing_is_left(scv_home):
    agent = subprocess.Popen(["sleep", "300"])
    try:
        me = psutil.Process()
        records.write(scv_home, records.Record(handle="codex-dddddd", parent="i/s-1/codex-dddddd", agent="codex",
                                               session="s-1", cwd="/", depth=1, started_unix=time.time(),
                                               pid=agent.pid, pid_start=processes.start_time(agent.pid),
                                               owner_pid=me.pid, owner_start=me.create_time()))
        assert reconcile(scv_home).orphans == [] and len(records_in(scv_home)) == 1
        assert agent.poll() is None
    finally:
        agent.kill()
        agent.wait()
    assert reconcile(scv_home).orphans == []        # not an orphan: a stale record of a live owner
    assert records_in(scv_home) == []


def test_markers_of_dead_owners_are_removed(scv_home):
    folder = scv_home / "state" / "conversations"
    files.ensure_folder(folder)
    gone = subprocess.Popen(["true"])
    gone.wait()
    me = psutil.Process()
    (folder / "dead-marker").write_text(json.dumps({"pid": gone.pid, "agent": "codex", "handle": "codex-1"}))
    (folder / "reused-marker").write_text(json.dumps({"pid": me.pid, "start": me.create_time() - 99}))
    (folder / "live-marker").write_text(json.dumps({"pid": me.pid, "start": me.create_time()}))
    assert live_marker_ids(scv_home) == {"live-marker"}
    done = reconcile(scv_home)
    assert sorted(done.markers) == ["dead-marker", "reused-marker"]
    assert sorted(os.listdir(folder)) == ["live-marker"]


def test_kill_orphans_stops_every_process_tagged_with_the_run(scv_home):
    link = "scv-1-abc/s-9/codex-eeeeee"
    env = {"PATH": "/usr/bin:/bin", "SCV_PARENT": f"outer/s-0/scv-111111,{link}"}
    tagged = [subprocess.Popen(["sleep", "300"], env=env, start_new_session=True) for _ in range(2)]
    untagged = subprocess.Popen(["sleep", "300"], env={"PATH": "/usr/bin:/bin", "SCV_PARENT": link + "x"})
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        records.write(scv_home, records.Record(handle="codex-eeeeee", parent=f"outer/s-0/scv-111111,{link}",
                                               agent="codex", session="s-9", cwd="/", depth=2,
                                               started_unix=time.time(), pid=dead.pid, pid_start=1.0,
                                               owner_pid=dead.pid, owner_start=1.0))
        proc = run_scv("agents", "kill", "--orphans")
        assert proc.returncode == 0 and "stopped 1 orphan(s): codex-eeeeee" in proc.stdout
        for process in tagged:
            assert process.wait(20) == -15      # TERM
        assert untagged.poll() is None          # a different link is a different run
        assert records_in(scv_home) == []
    finally:
        for process in [*tagged, untagged]:
            process.kill()
            process.wait()


def test_scv_server_reconciles_when_it_starts(scv_home):
    link = "scv-2-def/s-3/codex-ffffff"
    orphan = subprocess.Popen(["sleep", "300"], env={"PATH": "/usr/bin:/bin", "SCV_PARENT": link},
                              start_new_session=True)
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        records.write(scv_home, records.Record(handle="codex-ffffff", parent=link, agent="codex", session="s-3",
                                               cwd="/", depth=1, started_unix=time.time(), pid=orphan.pid,
                                               pid_start=processes.start_time(orphan.pid), owner_pid=dead.pid,
                                               owner_start=1.0))
        proc = run_scv("server", "--stdio", input="")        # starts, reconciles, sees EOF, exits
        assert proc.returncode == 0, proc.stderr
        assert "stopped 1 orphaned delegation(s): codex-ffffff" in proc.stderr
        assert orphan.wait(20) == -15
        assert records_in(scv_home) == []
    finally:
        orphan.kill()
        orphan.wait()
