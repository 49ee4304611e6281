"""Batches you can leave alone over `--engine ray`, on the private one-machine Ray (the node's
workspace is the driver's): `isolate: worktree`, each task's worktree made by the node's runner
in a real git repository, every task on its own branch with exactly its own edit, no worktree
left and the user's checkout untouched; and a usage limit with a reset a few seconds ahead that
pauses the agent instead of failing its tasks. Skipped cleanly where Ray is not installed."""

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from scv.cluster import processes
from tests.agent_fakes import install
from tests.fakes import wait_for
from tests.ray_cluster import Machine
from tests.test_batch_quota import CLAUDE
from tests.test_batch_worktree import git, make_repo, worktree_paths

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed here (pip install 'scv[ray]'; .ci/run installs it)", allow_module_level=True)

SLOW = 240      # a private Ray starting and stopping on a loaded 2-core machine

EDIT = """prompt="${@: -1}"
echo "$prompt" >> shared.txt
printf '%s\\n' '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"edited"}}'
"""


def private_batch(tmp_path, temp, solo: Machine, batch: Path, *extra: str) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", str(batch), "--engine", "ray", *extra],
                            env={**solo.env(), "TMPDIR": str(temp)}, cwd=solo.workspace, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=SLOW)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    wait_for(lambda: processes.session_members(proc.pid) == [], timeout=30)     # Ray's processes went with it
    return proc.returncode, err.decode(errors="replace")


def test_isolated_tasks_on_a_private_ray_each_get_their_own_branch(tmp_path, short_tmp):
    shared = tmp_path / "shared"
    shared.mkdir()
    solo = Machine("solo", tmp_path / "solo", shared).setup()
    agent = install(solo.home / ".local" / "bin", "codex", solo.root / "log" / "codex")
    agent.write(EDIT)
    base = make_repo(solo.workspace)
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(json.dumps({"id": f"t{i}", "agent": "codex", "prompt": f"edit {i}",
                                         "isolate": "worktree"}) + "\n" for i in range(3)))
    output = tmp_path / "out.jsonl"
    code, err = private_batch(tmp_path, short_tmp, solo, batch, "--parallel", "2", "--output", str(output))
    assert code == 0, err
    found = {line["id"]: line for line in map(json.loads, output.read_text().splitlines())}
    for i in range(3):
        line = found[f"t{i}"]
        assert line["status"] == "completed" and line["branch"] == f"scv/out/t{i}" and line["base"] == base
        assert line["changed_files"] == ["shared.txt"] and line["node"]["id"]     # run on a Ray node
        assert git(solo.workspace, "show", f"scv/out/t{i}:shared.txt") == f"first line\nedit {i}\n"
    cwds = [agent.cwd(i) for i in range(3)]
    assert len(set(cwds)) == 3 and all(str(solo.scv_home / "worktrees") in cwd for cwd in cwds)
    assert worktree_paths(solo.workspace) == [str(solo.workspace)]
    assert (solo.workspace / "shared.txt").read_text() == "first line\n"


def test_a_usage_limit_on_a_ray_node_pauses_the_agent_and_no_task_fails(tmp_path, short_tmp):
    shared = tmp_path / "shared"
    shared.mkdir()
    solo = Machine("solo", tmp_path / "solo", shared).setup()
    state = tmp_path / "state"
    state.mkdir()
    (state / "hit2").mkdir()        # the first call only is refused, with a reset 3 s ahead
    install(solo.home / ".local" / "bin", "claude", solo.root / "log" / "claude").write(
        CLAUDE.format(state=state, reset_in=3))
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(json.dumps({"id": i, "agent": "claude", "prompt": f"do {i}"}) + "\n" for i in "ab"))
    output = tmp_path / "out.jsonl"
    code, err = private_batch(tmp_path, short_tmp, solo, batch, "--parallel", "1", "--output", str(output))
    assert code == 0, err
    assert "claude paused until " in err
    found = {line["id"]: line["status"] for line in map(json.loads, output.read_text().splitlines())}
    assert found == {"a": "completed", "b": "completed"}
    log = (state / "log").read_text().split()
    assert log[0] == "limit" and log[2::2] == ["ok", "ok"] and all(int(when) >= int(log[1]) for when in log[3::2])


@pytest.fixture
def short_tmp():
    """Ray's socket paths must stay short: a temporary folder of this test's own under /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
