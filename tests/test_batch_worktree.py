"""`scv batch --isolate worktree` through real processes, a real git repository and a fake agent
CLI: each task on its own branch with only its own edit, lines refused at the check, and a
driver killed with SIGKILL whose worktrees `scv agents gc` removes before the resume."""

import json
import os
import signal
import subprocess

from tests.batch_fakes import write_lines
from tests.conftest import run_scv
from tests.delegation_fakes import fake_agent, gone
from tests.fakes import scv_process, setup_fake_home, wait_for

# The fake appends its prompt to shared.txt in the folder it runs in (the same file for every
# task), waits on prompts starting "slow" until told not to, and changes nothing on "nothing".
AGENT = """prompt="${{@: -1}}"
echo "$prompt" >> {log}
case "$prompt" in
  slow*) if [ ! -e {fast} ]; then echo $$ >> {pids}; sleep 300 & echo $! >> {pids}; wait; fi ;;
esac
case "$prompt" in
  nothing*) ;;
  *) echo "$prompt" >> shared.txt ;;
esac
echo "{{\\"type\\":\\"thread.started\\",\\"thread_id\\":\\"thread-$$\\"}}"
printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"done"}}}}'
"""


def git(repo, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(workspace):
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "user.name", "Repo Owner")
    git(workspace, "config", "user.email", "owner@example.org")
    (workspace / "shared.txt").write_text("first line\n")
    git(workspace, "add", "shared.txt")
    git(workspace, "commit", "-q", "-m", "start")
    return git(workspace, "rev-parse", "HEAD").strip()


def install(tmp_path):
    paths = {name: tmp_path / f"{name}.txt" for name in ("log", "fast", "pids")}
    fake_agent(tmp_path, "codex", AGENT.format(**{k: str(v) for k, v in paths.items()}))
    return paths


def results(path) -> dict[str, dict]:
    return {line["id"]: line for line in map(json.loads, path.read_text().splitlines()) if line}


def worktree_paths(repo) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_twenty_tasks_editing_one_file_each_get_a_branch_with_only_their_edit(tmp_path, monkeypatch, workspace,
                                                                             scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    install(tmp_path)
    base = make_repo(workspace)
    (workspace / "shared.txt").write_text("the user's own unsaved change\n")     # untouched by the batch
    prompts = [f"edit number {i}" for i in range(20)] + ["nothing to do"]
    batch = write_lines(tmp_path / "b.jsonl", *(json.dumps({"id": f"t{i}", "agent": "codex", "prompt": p})
                                                for i, p in enumerate(prompts)))
    output = tmp_path / "run1.jsonl"
    proc = run_scv("batch", str(batch), "--isolate", "worktree", "--parallel", "4", "--output", str(output),
                   "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    lines = results(output)
    assert len(lines) == 21
    for i in range(20):
        line = lines[f"t{i}"]
        assert line["status"] == "completed" and line["branch"] == f"scv/run1/t{i}"
        assert line["base"] == base and line["changed_files"] == ["shared.txt"]
        assert line["diffstat"] == "1 file changed, 1 insertion(+)"
        assert git(workspace, "rev-parse", line["branch"]).strip() == line["commit"]
        assert git(workspace, "show", f"{line['branch']}:shared.txt") == f"first line\nedit number {i}\n"
        author = git(workspace, "log", "-1", "--format=%an <%ae>|%s", line["branch"]).strip()
        assert author == f"Repo Owner <owner@example.org>|scv batch t{i}: edit number {i}"
    idle = lines["t20"]
    assert idle["changed_files"] == [] and idle["branch"] is None and idle["commit"] is None
    assert not git(workspace, "branch", "--list", "scv/run1/t20").strip()
    assert (workspace / "shared.txt").read_text() == "the user's own unsaved change\n"
    assert git(workspace, "rev-parse", "HEAD").strip() == base
    assert worktree_paths(workspace) == [str(workspace)]
    assert not [p for p in (scv_home / "worktrees").iterdir() if not p.name.startswith(".")]


def test_bad_isolation_lines_are_refused_before_anything_starts(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    paths = install(tmp_path)
    outside = tmp_path / "ws" / "plain"
    outside.mkdir()
    batch = write_lines(tmp_path / "b.jsonl",
                        json.dumps({"id": "a", "agent": "codex", "prompt": "p", "isolate": "worktree"}),
                        json.dumps({"id": "b", "agent": "codex", "prompt": "p", "isolate": "container"}),
                        json.dumps({"id": "c", "agent": "codex", "prompt": "p", "base": "main"}),
                        json.dumps({"id": "d", "agent": "codex", "prompt": "p", "verify": "pytest"}),
                        json.dumps({"id": "e", "agent": "codex", "prompt": "p", "attempts": 0}))
    proc = run_scv("batch", str(batch), "-C", str(workspace))
    assert proc.returncode == 2
    assert "line 1: isolate needs cwd inside a git repository" in proc.stderr
    assert "line 2: isolate 'container' is not known" in proc.stderr
    assert "line 3: base is for isolated tasks" in proc.stderr
    assert "line 4: " in proc.stderr and "$.verify" in proc.stderr
    assert "line 5: " in proc.stderr and "$.attempts" in proc.stderr
    make_repo(workspace)
    bad = write_lines(tmp_path / "c.jsonl",
                      json.dumps({"id": "x..y", "agent": "codex", "prompt": "p", "isolate": "worktree"}),
                      json.dumps({"id": "z", "agent": "codex", "prompt": "p", "isolate": "worktree", "base": "nope"}))
    proc = run_scv("batch", str(bad), "-C", str(workspace))
    assert proc.returncode == 2
    assert "line 1: id 'x..y' cannot be part of a git branch name" in proc.stderr
    assert "line 2: base 'nope' is not a commit" in proc.stderr
    assert not paths["log"].exists()


def test_a_killed_driver_leaves_worktrees_that_gc_removes_and_the_resume_reruns(tmp_path, monkeypatch, workspace,
                                                                               scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    paths = install(tmp_path)
    base = make_repo(workspace)
    batch = write_lines(tmp_path / "b.jsonl", *(json.dumps({"id": i, "agent": "codex", "prompt": p,
                                                             "isolate": "worktree"})
                                                for i, p in (("quick", "quick edit"), ("slow", "slow edit"))))
    output = tmp_path / "out.jsonl"
    with scv_process("batch", str(batch), "--output", str(output), "--parallel", "2", "-C", str(workspace)) as proc:
        wait_for(lambda: paths["pids"].exists() and len(paths["pids"].read_text().split()) == 2)
        wait_for(lambda: output.exists() and "quick" in results(output))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(worktree_paths(workspace)) == 2          # the slow task's worktree is left behind
    listed = run_scv("agents", "gc", "--dry-run", "--json")
    assert listed.returncode == 0, listed.stderr
    [stray] = json.loads(listed.stdout)["worktrees"]
    assert stray["branch"] == "scv/out/slow" and stray["repository"] == str(workspace)
    assert os.path.isdir(stray["path"])
    swept = run_scv("agents", "gc")
    assert swept.returncode == 0, swept.stderr
    assert f"removed {stray['path']}" in swept.stdout
    wait_for(lambda: gone([int(p) for p in paths["pids"].read_text().split()]), what="the orphaned agent to stop")
    assert worktree_paths(workspace) == [str(workspace)] and not os.path.exists(stray["path"])
    assert git(workspace, "rev-parse", "scv/out/slow").strip() == base      # the branch stays
    paths["fast"].write_text("")
    again = run_scv("batch", str(batch), "--output", str(output), "-C", str(workspace))
    assert again.returncode == 0, again.stderr
    lines = results(output)
    assert lines["slow"]["status"] == "completed" and lines["slow"]["base"] == base
    assert git(workspace, "show", "scv/out/slow:shared.txt") == "first line\nslow edit\n"
    assert git(workspace, "show", "scv/out/quick:shared.txt") == "first line\nquick edit\n"
    assert paths["log"].read_text().splitlines().count("quick edit") == 1     # the completed one kept its branch
    assert worktree_paths(workspace) == [str(workspace)]
    assert json.loads(run_scv("agents", "gc", "--dry-run", "--json").stdout)["worktrees"] == []


CHECKED = """prompt="${{@: -1}}"
printf '%s\\n----\\n' "$prompt" >> {log}
case "$prompt" in
  *"The check"*) echo fixed >> shared.txt ;;
  *) echo "first try" >> shared.txt ;;
esac
echo "{{\\"type\\":\\"thread.started\\",\\"thread_id\\":\\"thread-$$\\"}}"
printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"done"}}}}'
"""


def test_a_check_that_passes_on_the_second_attempt_completes_and_one_that_never_does_fails(tmp_path, monkeypatch,
                                                                                           workspace):
    setup_fake_home(tmp_path, monkeypatch)
    log = tmp_path / "prompts.txt"
    fake_agent(tmp_path, "codex", CHECKED.format(log=log))
    make_repo(workspace)
    batch = write_lines(tmp_path / "b.jsonl",
                        json.dumps({"id": "fix", "agent": "codex", "prompt": "make it right", "attempts": 3}),
                        json.dumps({"id": "never", "agent": "codex", "prompt": "try", "attempts": 2,
                                    "verify": ["true", "echo no luck; exit 4"]}))
    output = tmp_path / "out.jsonl"
    proc = run_scv("batch", str(batch), "--isolate", "worktree", "--verify", "grep -q fixed shared.txt",
                   "--verify", "test -e shared.txt", "--output", str(output), "--parallel", "2", "-C", str(workspace))
    assert proc.returncode == 1, proc.stderr
    lines = results(output)
    fixed = lines["fix"]
    assert fixed["status"] == "completed" and fixed["verify_attempt"] == 2
    assert [(c["command"], c["exit_code"]) for c in fixed["verify"]] == [("grep -q fixed shared.txt", 0),
                                                                         ("test -e shared.txt", 0)]
    assert git(workspace, "show", "scv/out/fix:shared.txt") == "first line\nfirst try\nfixed\n"
    never = lines["never"]
    assert never["status"] == "failed" and never["verify_attempt"] == 2
    assert never["error"] == "the check `echo no luck; exit 4` failed (exit code 4) after 2 attempt(s)"
    assert never["verify"][-1] == {"command": "echo no luck; exit 4", "exit_code": 4, "output_tail": "no luck\n"}
    assert never["branch"] == "scv/out/never"       # a failed task's work is committed too
    prompts = log.read_text().split("\n----\n")
    second = [p for p in prompts if "grep -q fixed shared.txt" in p]
    assert len(second) == 1 and "The check `grep -q fixed shared.txt` failed (exit code 1)" in second[0]
    assert sum("echo no luck; exit 4" in p for p in prompts) == 1


def test_rerun_runs_again_only_the_statuses_it_names(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    log = tmp_path / "prompts.txt"
    fake_agent(tmp_path, "codex", CHECKED.format(log=log))
    output = write_lines(tmp_path / "out.jsonl",
                         json.dumps({"id": "a", "agent": "codex", "status": "failed", "error": "x"}),
                         json.dumps({"id": "b", "agent": "codex", "status": "timeout"}),
                         json.dumps({"id": "c", "agent": "codex", "status": "completed"}))
    batch = write_lines(tmp_path / "b.jsonl", *(json.dumps({"id": i, "agent": "codex", "prompt": f"do {i}"})
                                                for i in "abc"))
    bad = run_scv("batch", str(batch), "--output", str(output), "--rerun", "completed", "-C", str(workspace))
    assert bad.returncode == 2 and "--rerun 'completed' must name statuses other than completed" in bad.stderr
    proc = run_scv("batch", str(batch), "--output", str(output), "--rerun", "timeout", "-C", str(workspace))
    assert proc.returncode == 1, proc.stderr        # a kept failed task still fails the batch
    assert {k: v["status"] for k, v in results(output).items()} == {"a": "failed", "b": "completed",
                                                                     "c": "completed"}
    assert [p for p in log.read_text().split("\n----\n") if p] == ["do b"]


def test_sigint_during_a_check_cancels_the_task_and_removes_its_worktree(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", CHECKED.format(log=tmp_path / "prompts.txt"))
    base = make_repo(workspace)
    marker = tmp_path / "check.pid"
    batch = write_lines(tmp_path / "b.jsonl", json.dumps({"id": "t", "agent": "codex", "prompt": "go",
                                                          "isolate": "worktree"}))
    output = tmp_path / "out.jsonl"
    with scv_process("batch", str(batch), "--verify", f"echo $$ > {marker}; exec sleep 300", "--output", str(output),
                     "-C", str(workspace)) as proc:
        wait_for(lambda: marker.exists() and marker.read_text().strip(), what="the check to start")
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
    line = results(output)["t"]
    assert line["status"] == "cancelled" and line["commit"] is None and line["branch"] == "scv/out/t"
    wait_for(lambda: gone([int(marker.read_text())]), what="the check's process to stop")
    assert worktree_paths(workspace) == [str(workspace)]
    assert git(workspace, "rev-parse", "scv/out/t").strip() == base     # the uncommitted work was discarded
