"""`scv batch --engine ray` and `scv cluster` on a real Ray cluster on this machine: a head and
two nodes started by `scv cluster head/join`, each node a private home with its own fake agent
CLIs (alpha offers codex, beta claude), shared by the tests of this module, every process stopped
at the end. Tasks go to the nodes that offer their agent, progress arrives while they run, an
agent no node offers fails at once, SIGINT and a SIGKILLed driver leave no process on any node,
resume completes the rest, a detached batch re-attaches, a lost node's task runs again
elsewhere, and join refuses what it must. The private one-machine Ray (no --address) too."""

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scv.cluster import processes
from tests.conftest import ROOT
from tests.delegation_fakes import gone
from tests.fakes import wait_for
from tests.ray_cluster import Machine, free_port, kill_pids, shared_pids

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed here (pip install 'scv[ray]'; .ci/run installs it)", allow_module_level=True)

SLOW = 120      # Ray on a loaded 2-core machine: starting, scheduling and tearing down take seconds


@dataclass
class Cluster:
    address: str
    token: Path
    head: Machine
    alpha: Machine
    beta: Machine
    shared: Path
    node_ids: dict[str, str]
    machines: list[Machine] = field(default_factory=list)

    def reset(self) -> Machine:
        """A fresh start for a test: no recorded pids, no release file; the head, which drives."""
        for name in ("pids", "release"):
            (self.shared / name).unlink(missing_ok=True)
        return self.head

    def copy_token(self, machine: Machine) -> Path:
        target = machine.root / "head-token"
        shutil.copyfile(self.token, target)
        os.chmod(target, 0o600)
        return target

    def batch(self, machine: Machine, path: Path, *extra: str) -> list[str]:
        return ["batch", str(path), "--engine", "ray", "--address", self.address, "--token-file",
                str(self.copy_token(machine)), *extra]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-cluster")
    shared = root / "shared"
    shared.mkdir()
    head = Machine("head", root / "head", shared).setup()
    alpha = Machine("alpha", root / "alpha", shared).setup()
    alpha.codex()
    beta = Machine("beta", root / "beta", shared).setup()
    beta.claude()
    machines = [head, alpha, beta]
    try:
        started = head.scv("cluster", "head", "--port", str(free_port()), "--node-ip", "127.0.0.1", "--json")
        assert started.returncode == 0, started.stderr
        address = json.loads(started.stdout)["address"]
        cluster = Cluster(address, head.scv_home / "cluster" / "token", head, alpha, beta, shared, {}, machines)
        for machine, slots in ((alpha, "codex=2"), (beta, "claude=1")):
            joined = machine.scv("cluster", "join", address, "--token-file", str(cluster.copy_token(machine)),
                                 "--slots", slots, "--node-ip", "127.0.0.1", "--json")
            assert joined.returncode == 0, joined.stderr
            cluster.node_ids[machine.name] = json.loads(joined.stdout)["node_id"]
        yield cluster
    finally:
        for machine in reversed(machines):
            machine.leave()
        kill_pids(shared_pids(shared))


def write_batch(path: Path, *tasks: dict) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def lines_of(path: Path) -> dict[str, dict]:
    found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    by_id = {line["id"]: line for line in found}
    assert len(by_id) == len(found), f"a task has two result lines: {found}"
    return by_id


def test_tasks_go_to_the_nodes_offering_their_agent_with_progress_while_they_run(cluster, tmp_path):
    head = cluster.reset()
    batch = write_batch(tmp_path / "b.jsonl",
                        *[{"id": f"c{i}", "agent": "codex", "prompt": f"hold c{i}"} for i in range(3)],
                        {"id": "k0", "agent": "claude", "prompt": "hold k0"},
                        {"id": "g0", "agent": "grok", "prompt": "anything"},
                        {"id": "w0", "agent": "codex", "prompt": "outside", "cwd": "/etc"})
    out, err = tmp_path / "out.jsonl", tmp_path / "err.txt"
    proc = head.start(*cluster.batch(head, batch, "--output", str(out), "--parallel", "5"), log=err)
    # The agent no node offers fails before anything else ends; nothing waits for it.
    wait_for(lambda: "g0" in lines_of(out), timeout=SLOW)
    assert "no node offers agent grok" in lines_of(out)["g0"]["error"]
    assert "codex 2" in lines_of(out)["g0"]["error"] and "claude 1" in lines_of(out)["g0"]["error"]
    # Two codex tasks (alpha has 2 slots) and the claude one run, and their progress is here already.
    wait_for(lambda: len(shared_pids(cluster.shared)) == 3, timeout=SLOW)
    wait_for(lambda: len(re.findall(r"^c\d@\S+: \$ make hold c\d$", err.read_text(), re.M)) == 2, timeout=SLOW)
    assert not {"c0", "c1", "c2", "k0"} & set(lines_of(out))

    def running_per_node():      # Ray's resource view follows the tasks within a moment
        status = head.json("cluster", "status", "--address", cluster.address, "--token-file", str(cluster.token))
        by_node = {node["id"]: node for node in status["nodes"]}
        seen = (by_node[cluster.node_ids["alpha"]]["running"], by_node[cluster.node_ids["beta"]]["running"])
        return status if seen == ({"codex": 2}, {"claude": 1}) else None
    status = wait_for(running_per_node, timeout=30, interval=0.5)
    assert [node["head"] for node in status["nodes"]].count(True) == 1 and status["orphans"] == []
    (cluster.shared / "release").write_text("")
    assert proc.wait(SLOW) == 1, err.read_text()        # g0 and w0 did not complete
    found = lines_of(out)
    for task_id in ("c0", "c1", "c2"):
        assert found[task_id]["status"] == "completed" and found[task_id]["reply"] == "done on alpha"
        assert found[task_id]["node"]["id"] == cluster.node_ids["alpha"] and found[task_id]["attempt"] == 1
    assert found["k0"]["status"] == "completed" and found["k0"]["node"]["id"] == cluster.node_ids["beta"]
    assert found["w0"]["status"] == "failed" and "outside the workspace" in found["w0"]["error"]
    assert sorted(cluster.alpha.prompts()) == ["hold c0", "hold c1", "hold c2"]     # w0 never reached codex
    assert cluster.beta.prompts() == ["hold k0"]
    for machine in cluster.machines:
        assert not (machine.home / ".ray").exists()         # nothing SCV started wrote ~/.ray


def test_sigint_leaves_no_process_on_any_node_and_resume_completes_the_rest(cluster, tmp_path):
    head = cluster.reset()
    batch = write_batch(tmp_path / "b.jsonl",
                        {"id": "s0", "agent": "codex", "prompt": "stay s0"},
                        {"id": "s1", "agent": "codex", "prompt": "stay s1"},
                        {"id": "s2", "agent": "claude", "prompt": "stay s2"},
                        {"id": "q3", "agent": "codex", "prompt": "quick q3"})
    out, err = tmp_path / "out.jsonl", tmp_path / "err.txt"
    proc = head.start(*cluster.batch(head, batch, "--output", str(out)), log=err)
    try:
        # Each agent ignores SIGTERM and left a setsid grandchild: 3 pids per task, on both nodes.
        wait_for(lambda: len(shared_pids(cluster.shared)) == 9, timeout=SLOW)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(SLOW) == 130, err.read_text()
        wait_for(lambda: gone(shared_pids(cluster.shared)), timeout=30)
    finally:
        kill_pids(shared_pids(cluster.shared))
    first = lines_of(out)
    assert {k: v["status"] for k, v in first.items()} == {"s0": "cancelled", "s1": "cancelled", "s2": "cancelled"}
    assert "(interrupted)" in err.read_text()
    (cluster.shared / "release").write_text("")
    again = head.scv(*cluster.batch(head, batch, "--output", str(out)), timeout=SLOW)
    assert again.returncode == 0, again.stderr
    found = lines_of(out)
    assert sorted(found) == ["q3", "s0", "s1", "s2"] and all(v["status"] == "completed" for v in found.values())
    assert cluster.alpha.prompts().count("quick q3") == 1


def test_a_sigkilled_driver_leaves_no_process_and_no_orphan(cluster, tmp_path):
    head = cluster.reset()
    batch = write_batch(tmp_path / "b.jsonl", {"id": "s0", "agent": "codex", "prompt": "stay s0"},
                        {"id": "s1", "agent": "claude", "prompt": "stay s1"})
    proc = head.start(*cluster.batch(head, batch), log=tmp_path / "err.txt")
    try:
        wait_for(lambda: len(shared_pids(cluster.shared)) == 6, timeout=SLOW)
        proc.kill()
        proc.wait(10)
        wait_for(lambda: gone(shared_pids(cluster.shared)), timeout=30)
    finally:
        kill_pids(shared_pids(cluster.shared))
    for machine in (cluster.alpha, cluster.beta):
        status = machine.json("cluster", "status", "--token-file", str(cluster.copy_token(machine)))
        assert status["orphans"] == [] and status["this_machine"]["node"]["running"]


def test_a_detached_batch_re_attaches_without_running_a_task_twice_and_cancels(cluster, tmp_path):
    head = cluster.reset()
    batch = write_batch(tmp_path / "b.jsonl", {"id": "h0", "agent": "codex", "prompt": "hold h0"},
                        {"id": "h1", "agent": "claude", "prompt": "hold h1"})
    out, err = tmp_path / "out.jsonl", tmp_path / "err.txt"
    attached = head.start(*cluster.batch(head, batch, "--output", str(out), "--detach"), log=err)
    wait_for(lambda: len(shared_pids(cluster.shared)) == 2, timeout=SLOW)
    attached.kill()             # the local command goes; the batch stays with the head
    attached.wait(10)
    (cluster.shared / "release").write_text("")
    wait_for(lambda: gone(shared_pids(cluster.shared)), timeout=SLOW)      # both finished while detached
    again = head.scv(*cluster.batch(head, batch, "--output", str(out), "--detach"), timeout=SLOW)
    assert again.returncode == 0, again.stderr
    assert "re-attached" in again.stderr
    found = lines_of(out)
    assert {k: v["status"] for k, v in found.items()} == {"h0": "completed", "h1": "completed"}
    assert cluster.alpha.prompts().count("hold h0") == 1 and cluster.beta.prompts().count("hold h1") == 1
    # Collected: the coordinator is gone, and a cancel now finds nothing to cancel.
    none = head.scv(*cluster.batch(head, batch, "--output", str(out), "--cancel"), timeout=SLOW)
    assert none.returncode == 1 and "nothing to cancel" in none.stderr
    cluster.reset()
    stays = write_batch(tmp_path / "s.jsonl", {"id": "s0", "agent": "codex", "prompt": "stay s0"})
    out2 = tmp_path / "out2.jsonl"
    attached = head.start(*cluster.batch(head, stays, "--output", str(out2), "--detach"), log=err)
    try:
        wait_for(lambda: len(shared_pids(cluster.shared)) == 3, timeout=SLOW)
        attached.send_signal(signal.SIGINT)
        assert attached.wait(SLOW) == 130
        assert not gone(shared_pids(cluster.shared))          # stopping the local command cancels nothing
        cancelled = head.scv(*cluster.batch(head, stays, "--output", str(out2), "--cancel"), timeout=SLOW)
        assert cancelled.returncode == 0, cancelled.stderr
        assert lines_of(out2)["s0"]["status"] == "cancelled"
        wait_for(lambda: gone(shared_pids(cluster.shared)), timeout=30)
    finally:
        kill_pids(shared_pids(cluster.shared))


def test_join_refuses_a_machine_without_agents_another_scv_version_and_a_wrong_token(cluster, tmp_path):
    bare = Machine("bare", tmp_path / "bare", cluster.shared).setup()
    cluster.machines.append(bare)
    refused = bare.scv("cluster", "join", cluster.address, "--token-file", str(cluster.copy_token(bare)))
    assert refused.returncode == 1
    assert "no agent is installed and signed in" in refused.stderr and "codex: not installed" in refused.stderr
    old = Machine("old", tmp_path / "old", cluster.shared).setup()
    old.codex()
    cluster.machines.append(old)
    other = tmp_path / "other-scv"
    for package in ("scv", "workers"):
        shutil.copytree(ROOT / package, other / package, ignore=shutil.ignore_patterns("__pycache__"))
    init = other / "scv" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "0.0.9+'))
    mixed = old.scv("cluster", "join", cluster.address, "--token-file", str(cluster.copy_token(old)),
                    PYTHONPATH=str(other))
    assert mixed.returncode == 1 and "install the same SCV version" in mixed.stderr, mixed.stderr
    wrong = old.root / "wrong-token"
    wrong.write_text("0" * 64)
    os.chmod(wrong, 0o600)
    denied = old.scv("cluster", "join", cluster.address, "--token-file", str(wrong), timeout=60)
    assert denied.returncode == 1 and f"refused the token in {wrong}" in denied.stderr
    os.chmod(wrong, 0o644)
    loose = old.scv("cluster", "join", cluster.address, "--token-file", str(wrong))
    assert loose.returncode == 1 and "can be read by others (mode 0644)" in loose.stderr
    assert old.records() == [] and bare.records() == []           # nothing was started


def test_a_node_lost_mid_run_gives_lost_and_retries_runs_it_on_another(cluster, tmp_path):
    # Last in the module: it kills a node.
    cluster.reset()
    gamma = Machine("gamma", tmp_path / "gamma", cluster.shared).setup()
    gamma.codex()
    cluster.machines.append(gamma)
    joined = gamma.scv("cluster", "join", cluster.address, "--token-file", str(cluster.copy_token(gamma)),
                       "--slots", "codex=1", "--node-ip", "127.0.0.1", "--json")
    assert joined.returncode == 0, joined.stderr
    ids = {"alpha": cluster.node_ids["alpha"], "gamma": json.loads(joined.stdout)["node_id"]}
    head = cluster.head
    batch = write_batch(tmp_path / "b.jsonl", {"id": "r0", "agent": "codex", "prompt": "hold r0"})
    out, err = tmp_path / "out.jsonl", tmp_path / "err.txt"
    proc = head.start(*cluster.batch(head, batch, "--output", str(out), "--retries", "1"), log=err)
    wait_for(lambda: len(shared_pids(cluster.shared)) == 1, timeout=SLOW)
    victim = next(m for m in (cluster.alpha, gamma) if "hold r0" in m.prompts())
    survivor = gamma if victim is cluster.alpha else cluster.alpha
    record = victim.records()[0]
    raylet = next(p.pid for p in record.processes if p.name.startswith("raylet"))
    os.kill(raylet, signal.SIGKILL)
    wait_for(lambda: "hold r0" in survivor.prompts(), timeout=SLOW)       # attempt 2, elsewhere
    (cluster.shared / "release").write_text("")
    assert proc.wait(SLOW) == 0, err.read_text()
    line = lines_of(out)["r0"]
    assert line["status"] == "completed" and line["attempt"] == 2 and line["node"]["id"] == ids[survivor.name]
    assert re.search(r"r0 lost: node \S+ \(Ray node id \w+\) went away: \w+Error; running it again \(attempt 2 of 2\)",
                     err.read_text()), err.read_text()
    # The dead raylet's dashboard and runtime-env agents outlive it; leave stops them by recorded pid.
    victim.leave()
    wait_for(lambda: processes.live(record) == [], timeout=30)


@pytest.fixture
def short_tmp():
    """A short temporary folder of this test's own (Ray's socket paths must stay short), so what
    a private Ray leaves behind is told apart from another suite's running at the same time."""
    folder = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def private_driver(tmp_path: Path, temp: Path, *tasks: dict, **popen) -> tuple[Machine, subprocess.Popen]:
    """`scv batch --engine ray` without --address, in a session of its own (Ray's processes
    inherit it), on a machine offering codex, with its temporary folders under `temp`."""
    shared = tmp_path / "shared"
    shared.mkdir()
    solo = Machine("solo", tmp_path / "solo", shared).setup()
    solo.codex()
    batch = write_batch(tmp_path / "b.jsonl", *tasks)
    proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", str(batch), "--engine", "ray", "--output",
                             str(tmp_path / "out.jsonl")], env={**solo.env(), "TMPDIR": str(temp)},
                            cwd=solo.workspace,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True, **popen)
    return solo, proc


def test_the_private_one_machine_ray_runs_a_batch_and_leaves_nothing(tmp_path, short_tmp):
    solo, proc = private_driver(tmp_path, short_tmp, {"id": "a", "agent": "codex", "prompt": "quick a"},
                                {"id": "b", "agent": "codex", "prompt": "quick b"},
                                {"id": "x", "agent": "claude", "prompt": "p"}, stderr=subprocess.PIPE)
    out = tmp_path / "out.jsonl"
    try:
        _, err = proc.communicate(timeout=SLOW)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    found = lines_of(out)
    assert found["a"]["status"] == found["b"]["status"] == "completed" and found["a"]["reply"] == "done on solo"
    assert "no node offers agent claude" in found["x"]["error"]
    wait_for(lambda: processes.session_members(proc.pid) == [], timeout=30)   # Ray's processes went with it
    assert list(short_tmp.glob("scv-ray-*")) == []
    assert not (solo.home / ".ray").exists()


def test_a_sigkilled_driver_of_a_private_ray_leaves_nothing(tmp_path, short_tmp):
    solo, proc = private_driver(tmp_path, short_tmp, {"id": "s", "agent": "codex", "prompt": "stay s"},
                                stderr=subprocess.DEVNULL)
    shared = solo.shared
    try:
        wait_for(lambda: len(shared_pids(shared)) == 3, timeout=SLOW)
        proc.kill()
        proc.wait(10)
        wait_for(lambda: gone(shared_pids(shared)), timeout=30)
        wait_for(lambda: processes.session_members(proc.pid) == [], timeout=30)
        # The watchdog stopped what Ray left (its agents) and removed the private folder.
        wait_for(lambda: list(short_tmp.glob("scv-ray-*")) == [], timeout=30)
    finally:
        kill_pids(shared_pids(shared))
        if proc.poll() is None:
            proc.kill()


def test_a_schema_path_is_read_by_the_driver_and_the_task_carries_the_object(cluster, tmp_path):
    """The schema file lives beside the batch file on the driver's machine; the node's agent gets
    the instruction with the schema itself, and its prose ends `schema_invalid` with the errors."""
    head = cluster.reset()
    (tmp_path / "schemas").mkdir()
    schema = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]}
    (tmp_path / "schemas" / "verdict.json").write_text(json.dumps(schema))
    batch = write_batch(tmp_path / "b.jsonl",
                        {"id": "s0", "agent": "codex", "prompt": "quick s0", "schema": "schemas/verdict.json"})
    out, err = tmp_path / "out.jsonl", tmp_path / "err.txt"
    proc = head.start(*cluster.batch(head, batch, "--output", str(out)), log=err)
    assert proc.wait(SLOW) == 1, err.read_text()         # schema_invalid fails the batch
    found = lines_of(out)["s0"]
    assert found["status"] == "schema_invalid" and found["reply"].startswith("done on ") and found["errors"], found
    # Whichever node offering codex ran it (an earlier test may have replaced one) got the schema.
    logs = [m.root / "log" / "prompts" for m in cluster.machines]
    sent = "".join(log.read_text() for log in logs if log.exists())
    assert "Structured result" in sent and '"required":["verdict"]' in sent
