"""The parts of `scv cluster` and `scv batch --engine ray` that need no Ray cluster, through real
processes: the token file's checks, addresses, the driver's task checks, a node's processes
stopped by pid (its runners first), the private Ray's watchdog, and Ray imported only on the Ray
paths (`--engine ray` without Ray says to install scv[ray])."""

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import shutil
import tempfile
from pathlib import Path

import pytest

from scv.batch.remote_check import checker
from scv.cluster import processes
from scv.cluster.processes import NodeRecord, RayProcess
from scv.cluster.settings import ClusterError, ensure_token, parse_address, ray_environment, read_token
from scv.config.load import Config
from scv.core import oscalls
from scv.core.errors import RefusedError, UsageError
from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import fake_agent, gone
from tests.fakes import setup_fake_home, wait_for
from tests.batch_fakes import write_tasks


def test_the_token_is_created_0600_in_a_0700_folder_kept_and_checked(tmp_path):
    path = tmp_path / "home" / "cluster" / "token"
    assert ensure_token(path) is True
    token = read_token(path)
    assert len(token) == 64 and int(token, 16) >= 0
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert ensure_token(path) is False and read_token(path) == token        # never replaced
    os.chmod(path, 0o644)
    with pytest.raises(ClusterError, match=r"can be read by others \(mode 0644\); run chmod 600"):
        read_token(path)
    with pytest.raises(ClusterError, match="does not exist"):
        read_token(tmp_path / "missing")
    link = tmp_path / "link"
    link.symlink_to(path)
    with pytest.raises(ClusterError, match="is not a regular file"):
        read_token(link)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    os.chmod(empty, 0o600)
    with pytest.raises(ClusterError, match="does not hold a token"):
        read_token(empty)


def test_ray_processes_get_token_auth_no_usage_stats_and_no_inherited_cluster(tmp_path):
    env = ray_environment({"RAY_ADDRESS": "10.0.0.9:6379", "RAY_AUTH_TOKEN": "leaked", "KEEP": "1"},
                          Path("tok"))
    assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN_PATH"] == str(Path("tok").absolute())
    assert env["RAY_USAGE_STATS_ENABLED"] == "0" and env["KEEP"] == "1"
    assert "RAY_ADDRESS" not in env and "RAY_AUTH_TOKEN" not in env


def test_addresses_are_host_and_port():
    assert parse_address("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert parse_address("head.example:7000") == ("head.example", 7000)
    assert parse_address("[::1]:6379") == ("::1", 6379)
    for bad in ("10.0.0.5", "10.0.0.5:0", ":6379", "host:port", "-x:1", "a b:1", "h:70000"):
        with pytest.raises(UsageError, match="is not HOST:PORT"):
            parse_address(bad)


def test_the_driver_checks_what_does_not_depend_on_the_agents_here():
    check = checker(Config())
    assert check({"prompt": "p", "agent": "codex", "cwd": "sub/dir"})["agent"] == "codex"
    assert check({"prompt": "p"}) == {"prompt": "p"}
    refusals = [({"prompt": "p", "agent": "zcode"}, 'agent "zcode" is not an agent SCV knows'),
                ({"prompt": "-rf"}, "cannot start with '-'"),
                ({"prompt": "p", "model": "-x"}, "cannot start with '-'"),
                ({"prompt": "p", "effort": "huge"}, "is not one of"),
                ({"prompt": "p", "cwd": "../up"}, "leaves the workspace"),
                ({"prompt": "p", "cwd": "a\x00b"}, "NUL"),
                ({"prompt": "p", "timeout_seconds": 10 ** 6}, "over the ceiling")]
    for args, sentence in refusals:
        with pytest.raises(RefusedError, match=sentence.replace("(", r"\(")):
            check(args)


RUNNER = """import signal, sys, time
def bye(*args):
    open(sys.argv[1] + "/runner-term", "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
open(sys.argv[1] + "/runner-up", "w").close()
time.sleep(300)
"""
RAYLET = """import signal, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
subprocess.Popen([sys.executable, sys.argv[2], sys.argv[1]], start_new_session=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1] + "/raylet-up", "w").close()
time.sleep(300)
"""


def _stand_in_node(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A Ray node stand-in: a stubborn 'raylet' (it ignores SIGTERM) in a session of its own, a
    'daemon' beside it, and a 'runner' child of it in a session of its own that ends on SIGTERM."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "runner.py").write_text(RUNNER)
    (tmp_path / "raylet.py").write_text(RAYLET)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "raylet.py"), str(marks), str(tmp_path / "runner.py")],
                            start_new_session=True)
    wait_for(lambda: (marks / "raylet-up").exists() and (marks / "runner-up").exists())
    return proc, marks


def test_leaving_cancels_the_runners_first_then_stops_only_the_recorded_session_by_pid(tmp_path):
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    proc, marks = _stand_in_node(tmp_path)
    try:
        started = oscalls.start_time(proc.pid) - 0.5
        wait_for(lambda: len(processes.session_members(proc.pid, started)) == 2)
        record = NodeRecord(role="node", address="h:1", session=proc.pid, started_unix=started, temp_dir="/nonexistent",
                            token_file="t", processes=processes.snapshot(proc.pid, started))
        ray_pids = processes.live(record)
        assert proc.pid in ray_pids and len(ray_pids) == 2
        runners = processes.runners(record, ray_pids)
        assert len(runners) == 1 and oscalls.session_of(runners[0]) == runners[0]
        tasks, stopped = processes.stop_node(record)
        assert (tasks, stopped) == (1, 2)
        assert (marks / "runner-term").exists()             # TERM reached the runner, which ended on its own
        proc.wait(10)
        assert processes.live(record) == [] and gone(runners)
        assert bystander.poll() is None                        # never touched
        # A record whose processes are all gone trusts no session any more, whatever runs in it.
        stale = NodeRecord(role="node", address="h:1", session=bystander.pid, started_unix=started,
                           temp_dir="/nonexistent", token_file="t", processes=[RayProcess(bystander.pid, 1.0)])
        assert processes.live(stale) == [] and processes.stop_node(stale) == (0, 0)
        assert bystander.poll() is None
    finally:
        for leftover in (proc, bystander):
            if leftover.poll() is None:
                leftover.kill()
                leftover.wait(10)


def test_the_watchdog_stops_what_it_was_told_about_once_its_input_ends(tmp_path):
    folder = Path(tempfile.mkdtemp(prefix="scv-ray-"))
    (folder / "session").mkdir()
    ray_like = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 300 & wait"], start_new_session=True)
    bystander = subprocess.Popen(["sleep", "300"])
    watchdog = subprocess.Popen([sys.executable, "-m", "scv.cluster.watchdog", str(folder)], env=scv_env(),
                                stdin=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(lambda: oscalls.start_time(ray_like.pid) is not None)
        lines = f"{ray_like.pid} {oscalls.start_time(ray_like.pid)}\n{bystander.pid} 12345.0\n"
        watchdog.stdin.write(lines.encode())
        watchdog.stdin.close()          # as when the driver ends, or is killed
        assert watchdog.wait(30) == 0
        assert ray_like.wait(10) == -signal.SIGKILL       # TERM was ignored: KILL after the grace
        assert bystander.poll() is None                   # its start time did not match
        assert not folder.exists()
    finally:
        for leftover in (ray_like, bystander, watchdog):
            if leftover.poll() is None:
                leftover.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(ray_like.pid, signal.SIGKILL)       # its own `sleep`, which the watchdog was not told of
        shutil.rmtree(folder, ignore_errors=True)


NO_RAY = ("import runpy, sys\n"
          "sys.modules['ray'] = None\n"          # as if Ray were not installed
          "sys.argv = ['scv'] + sys.argv[1:]\n"
          "try:\n"
          "    runpy.run_module('scv', run_name='__main__')\n"
          "finally:\n"
          "    print('RAY-LOADED' if sys.modules.get('ray') else 'NO-RAY', file=sys.stderr)\n")


def test_ray_is_imported_only_on_the_ray_paths_and_without_it_says_install(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "echo '{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":"
                                  "\"agent_message\",\"text\":\"ok\"}}'\n")
    batch = write_tasks(tmp_path / "b.jsonl", "one")

    def scv_without_ray(*args):
        return subprocess.run([sys.executable, "-c", NO_RAY, *args], env=scv_env(), capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    local = scv_without_ray("batch", str(batch), "-C", str(workspace))
    assert local.returncode == 0, local.stderr
    assert local.stderr.rstrip().endswith("NO-RAY") and json.loads(local.stdout)["status"] == "completed"
    for args in (["batch", str(batch), "--engine", "ray", "-C", str(workspace)], ["cluster", "head"],
                 ["cluster", "status"]):
        missing = scv_without_ray(*args)
        assert missing.returncode == 2, (args, missing.stderr)
        assert "install scv[ray]" in missing.stderr
    helped = scv_without_ray("cluster", "join", "--help")
    assert helped.returncode == 0 and "AGENT=N" in helped.stdout


def test_ray_options_need_the_ray_engine_and_detach_needs_an_address(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    batch = write_tasks(tmp_path / "b.jsonl", "one")
    local = run_scv("batch", str(batch), "--address", "h:1", "--retries", "1", "-C", str(workspace))
    assert local.returncode == 2 and "--address, --retries are for --engine ray" in local.stderr
    detached = run_scv("batch", str(batch), "--engine", "ray", "--detach", "-C", str(workspace))
    if "install scv[ray]" not in detached.stderr:
        assert detached.returncode == 2 and "--detach and --cancel need --address" in detached.stderr
    nothing = run_scv("cluster", "leave")
    assert nothing.returncode == 0 and "runs no SCV Ray node" in nothing.stdout
    assert json.loads(run_scv("cluster", "leave", "--json").stdout) == {"left": []}
    bad_slots = run_scv("cluster", "join", "h:1", "--slots", "codex")
    assert bad_slots.returncode == 2 and "is not AGENT=N" in bad_slots.stderr


def test_status_without_a_known_cluster_says_how_to_get_one(tmp_path, monkeypatch):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("scv cluster status needs Ray (pip install 'scv[ray]')")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    proc = run_scv("cluster", "status", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and "no cluster is known here" in report["error"] and report["nodes"] == []
    unreachable = run_scv("cluster", "status", "--address", "127.0.0.1:9", "--token-file", str(_token(tmp_path)))
    assert unreachable.returncode == 1 and "nothing answers at 127.0.0.1:9" in unreachable.stdout


def _token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    ensure_token(path)
    return path
