"""`scv batch --run-one`, the contract an engine uses for a task on a remote node, through real
processes: one task as JSON on stdin, progress lines then exactly one result line on stdout;
SIGTERM, the death of its parent, and SIGKILL of the runner itself each leave no process of the
agent behind (one that ignores SIGTERM and leaves a setsid grandchild); bad input, a refused
call and a cwd outside the node's workspace give one failed result."""

import contextlib
import json
import os
import signal
import subprocess
import sys

from scv.batch.run_one import encode_task
from scv.batch.tasks import TaskLine
from tests.conftest import scv_env
from tests.delegation_fakes import fake_agent, gone
from tests.fakes import setup_fake_home, wait_for

# Progress, then a reply; prompts starting "stay" ignore SIGTERM and leave a setsid grandchild.
AGENT = """prompt="${{@: -1}}"
printf '%s\\n' '{{"type":"item.started","item":{{"id":"c","type":"command_execution","command":"make it"}}}}'
case "$prompt" in
  stay*) trap '' TERM; echo $$ >> {pids}
         setsid bash -c 'echo $$ >> {pids}; exec sleep 300' &
         sleep 300 & echo $! >> {pids}; wait ;;
esac
printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"done '"$prompt"'"}}}}'
"""


def install(tmp_path):
    pids = tmp_path / "pids.txt"
    fake_agent(tmp_path, "codex", AGENT.format(pids=pids))
    return pids


def start(workspace, task: bytes, env=None) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", "--run-one", "-C", str(workspace)],
                            env=env or scv_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(task)
    proc.stdin.close()
    proc.stdin = None           # communicate() would flush it again
    return proc


def kill_leftovers(pids_file, *procs) -> None:
    """On a failure, this test's own processes only, by pid."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for pid in pids_in(pids_file):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def lines_of(stdout: bytes) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def task(prompt: str, **fields) -> bytes:
    return encode_task(TaskLine(id="t1", prompt=prompt, agent="codex", **fields), line=3, attempt=2)


def pids_in(path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_one_task_gives_progress_lines_then_exactly_one_result(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    install(tmp_path)
    proc = start(workspace, task("quick"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = lines_of(out)
    assert lines[0] == {"type": "progress", "text": "$ make it"}
    assert [line["type"] for line in lines].count("result") == 1 and lines[-1]["type"] == "result"
    result = lines[-1]["result"]
    assert result["status"] == "completed" and result["reply"] == "done quick" and result["agent"] == "codex"
    assert "session" not in result and "turn" not in result


def test_tasks_one_per_line_each_get_their_own_result_in_turn(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    install(tmp_path)
    proc = start(workspace, task("first") + b"\n" + encode_task(TaskLine(id="t2", prompt="second", agent="codex"), 4, 1)
                 + b"\n")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    results = [line["result"]["reply"] for line in lines_of(out) if line["type"] == "result"]
    assert results == ["done first", "done second"]
    assert [line["type"] for line in lines_of(out)] == ["progress", "result", "progress", "result"]


def staying(tmp_path, monkeypatch, workspace, prompt: str):
    """A runner whose agent ignores SIGTERM and left a setsid grandchild, all three running."""
    setup_fake_home(tmp_path, monkeypatch)
    pids = install(tmp_path)
    proc = start(workspace, task(prompt))
    try:
        wait_for(lambda: len(pids_in(pids)) == 3, timeout=60)
    except BaseException:
        kill_leftovers(pids, proc)
        raise
    return pids, proc


def test_sigterm_tears_the_whole_tree_down_and_reports_cancelled(tmp_path, monkeypatch, workspace):
    pids, proc = staying(tmp_path, monkeypatch, workspace, "stay here")
    try:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert lines_of(out)[-1]["result"]["status"] == "cancelled"
        wait_for(lambda: gone(pids_in(pids)))           # the TERM-ignoring agent and its setsid grandchild too
    finally:
        kill_leftovers(pids, proc)


def test_the_death_of_its_parent_triggers_the_teardown(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    pids = install(tmp_path)
    task_file = tmp_path / "task.json"
    task_file.write_bytes(task("stay there"))
    # An engine worker stand-in: it starts the runner from its main thread, then is SIGKILLed.
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys\n"
        "env = dict(os.environ, SCV_RUN_ONE_PARENT=str(os.getpid()))\n"
        f"subprocess.run([sys.executable, '-m', 'scv', 'batch', '--run-one', '-C', {str(workspace)!r}], "
        f"stdin=open({str(task_file)!r}, 'rb'), stdout=subprocess.DEVNULL, env=env, start_new_session=True)\n")],
        env=scv_env(), stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(pids_in(pids)) == 3, timeout=60)
        parent.kill()
        parent.wait(10)
        wait_for(lambda: gone(pids_in(pids)), timeout=30)
    finally:
        kill_leftovers(pids, parent)


def test_a_sigkilled_runner_leaves_nothing_of_the_agent(tmp_path, monkeypatch, workspace):
    pids, proc = staying(tmp_path, monkeypatch, workspace, "stay put")
    try:
        proc.kill()         # as Ray kills a task's worker and its direct children when the driver dies
        proc.wait(10)
        wait_for(lambda: gone(pids_in(pids)), timeout=30)
    finally:
        kill_leftovers(pids, proc)


def test_bad_input_a_refused_call_and_a_cwd_outside_the_workspace_each_give_one_failed_result(
        tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    install(tmp_path)
    bad = start(workspace, b'{"task": {"id": "x"}}')
    out, _ = bad.communicate(timeout=120)
    assert bad.returncode == 2
    assert lines_of(out) == [{"type": "result", "result": {
        "status": "failed", "error": "scv batch --run-one needs one task as JSON on stdin (Object missing required "
                                     "field `prompt` - at `$.task`)"}}]
    outside = start(workspace, task("p", cwd="../elsewhere"))
    out, _ = outside.communicate(timeout=120)
    result = lines_of(out)[-1]["result"]
    assert outside.returncode == 0 and result["status"] == "failed" and "outside the workspace" in result["error"]
    (workspace / "sub").mkdir()
    env = scv_env(SCV_NODE_WORKSPACE=str(workspace))
    inside = subprocess.run([sys.executable, "-m", "scv", "batch", "--run-one"], input=task("p", cwd="sub"),
                            capture_output=True, env=env, timeout=120, cwd=str(tmp_path))
    assert lines_of(inside.stdout)[-1]["result"]["status"] == "completed", inside.stderr
    ran_in = sorted((tmp_path / "log" / "codex").glob("cwd.*"))
    assert [os.path.realpath(p.read_text().strip()) for p in ran_in] == [str(workspace / "sub")]
    unknown = start(workspace, encode_task(TaskLine(id="t", prompt="p", agent="claude"), 1, 1))
    out, _ = unknown.communicate(timeout=120)
    assert 'agent "claude" is not offered' in lines_of(out)[-1]["result"]["error"]
