"""`isolate: worktree` over `--engine ray`: on the private one-machine Ray (the node's workspace is
the driver's, a real git repository), each task's worktree is made by the node's runner, the agent
edits the same file in each, and every task ends on its own branch with exactly its own edit, no
worktree left and the user's checkout untouched. Skipped cleanly where Ray is not installed."""

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
from tests.test_batch_worktree import git, make_repo, worktree_paths

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed here (pip install 'scv[ray]'; .ci/run installs it)", allow_module_level=True)

SLOW = 240      # a private Ray starting and stopping on a loaded 2-core machine

EDIT = """prompt="${@: -1}"
echo "$prompt" >> shared.txt
printf '%s\\n' '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"edited"}}'
"""


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
    proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", str(batch), "--engine", "ray", "--parallel", "2",
                             "--output", str(output)], env={**solo.env(), "TMPDIR": str(short_tmp)},
                            cwd=solo.workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=SLOW)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err.decode(errors="replace")
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
    wait_for(lambda: processes.session_members(proc.pid) == [], timeout=30)     # Ray's processes went with it


@pytest.fixture
def short_tmp():
    """Ray's socket paths must stay short: a temporary folder of this test's own under /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
