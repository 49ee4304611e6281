"""Delegation records through real runs: written while a fake agent runs (0600 in 0700, PID and
start time of agent and owner), listed by `scv agents ps` and `scv status` from another process,
removed when the run ends; `scv agents kill` stops the run and a `setsid` escapee."""

import json
import os
import stat
import threading

import psutil

from scv.core import files
from scv.core.delegations import records
from tests.conftest import run_scv
from tests.delegation_fakes import codex_reply_lines, fake_agent, records_in, tagged_with
from tests.fakes import setup_fake_home, wait_for


def start_call(runner, raw: dict) -> tuple[threading.Thread, list]:
    out = []
    thread = threading.Thread(target=lambda: out.append(runner.run(runner.prepare("agent", raw))), daemon=True)
    thread.start()
    return thread, out


def test_record_lives_as_long_as_the_run(tmp_path, monkeypatch, make_runner, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    gate = tmp_path / "gate"
    fake_agent(tmp_path, "codex", f"while [ ! -e {gate} ]; do sleep 0.05; done\n" + codex_reply_lines("done"))
    runner = make_runner()
    thread, out = start_call(runner, {"agent": "codex", "prompt": "work"})
    found = wait_for(lambda: records_in(scv_home))
    record = found[0]
    path = scv_home / "state" / "delegations" / f"{record['handle']}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert record["agent"] == "codex" and record["depth"] == 1
    assert record["conversation"] == "codex-1" and record["turn"] == 1
    assert record["owner_pid"] == os.getpid()       # this process holds the supervisor
    assert abs(record["owner_start"] - psutil.Process().create_time()) < 0.05
    agent = psutil.Process(record["pid"])
    assert abs(agent.create_time() - record["pid_start"]) < 0.05
    assert record["parent"].endswith("/" + record["handle"])
    assert record["session"] and record["session"] in record["parent"]
    # Any SCV process of this SCV_HOME sees it.
    listed = json.loads(run_scv("agents", "ps", "--json").stdout)["delegations"]
    assert [row["handle"] for row in listed] == [record["handle"]]
    assert listed[0]["state"] == "running" and listed[0]["conversation"] == "codex-1"
    table = run_scv("agents", "ps").stdout.splitlines()
    assert table[0].split()[:3] == ["HANDLE", "AGENT", "STATE"]
    assert table[1].split()[:4] == [record["handle"], "codex", "running", str(record["pid"])]
    assert "codex-1#1" in table[1]
    status = json.loads(run_scv("status", "--json").stdout)
    assert status["running"] == 1 and status["orphans"] == 0
    assert "delegations: 1 running, 0 idle" in run_scv("status").stdout
    gate.write_text("go")
    thread.join(20)
    assert out[0].ok and out[0].value["reply"] == "done"
    assert records_in(scv_home) == []
    assert "no delegated agents are running" in run_scv("agents", "ps").stdout


def test_agents_kill_stops_the_run_and_its_setsid_escapee(tmp_path, monkeypatch, make_runner, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "setsid sleep 300 &\nsleep 300 &\nwait\n")
    runner = make_runner()
    thread, out = start_call(runner, {"agent": "codex", "prompt": "work"})
    record = wait_for(lambda: records_in(scv_home))[0]
    wait_for(lambda: len(tagged_with(record["handle"])) >= 3)   # the fake (bash), its sleep, the setsid one
    proc = run_scv("agents", "kill", record["handle"])
    assert proc.returncode == 0, proc.stderr
    assert f"stopped {record['handle']}" in proc.stdout
    thread.join(20)
    assert not thread.is_alive()
    assert out[0].value["status"] == "cancelled"
    assert "stopped by scv agents kill" in out[0].value["error"]
    assert tagged_with(record["handle"]) == []
    assert records_in(scv_home) == []


def test_agents_kill_refuses_bad_and_unknown_handles():
    bad = run_scv("agents", "kill", "../etc")
    assert bad.returncode == 2 and "is not a delegation handle" in bad.stderr
    unknown = run_scv("agents", "kill", "codex-000000")
    assert unknown.returncode == 1 and "no delegation codex-000000 is recorded" in unknown.stderr
    neither = run_scv("agents", "kill")
    assert neither.returncode == 2 and "--orphans" in neither.stderr


def test_records_skip_symlinks_and_garbage(scv_home, tmp_path):
    folder = scv_home / "state" / "delegations"
    files.ensure_folder(folder)
    (folder / "junk.json").write_text("{not json")
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    os.symlink(outside, folder / "link.json")
    assert records.all_records(scv_home) == []
    listed = run_scv("agents", "ps", "--all", "--json")
    assert json.loads(listed.stdout) == {"delegations": []}


def test_folders_made_for_a_record_are_0700(tmp_path):
    home = tmp_path / "fresh-home"
    record = records.Record(handle="codex-abcdef", parent="i/s-1/codex-abcdef", agent="codex", session="s-1",
                            cwd="/", depth=1, pid=1, pid_start=1.0, owner_pid=1, owner_start=1.0,
                            started_unix=1.0)
    old = os.umask(0o022)
    try:
        path = records.write(home, record)
    finally:
        os.umask(old)
    for folder in (home, home / "state", home / "state" / "delegations"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert records.read(home, "codex-abcdef") == record
