"""`scv batch` through real processes and fake agent CLIs: input checked line by line before
anything starts, results as each task finishes, exit statuses, and resuming an interrupted run
(Ctrl-C cancels running tasks and stops their processes) so each result appears exactly once."""

import json
import re
import signal
import subprocess

from tests.conftest import run_scv, scv_env
from tests.delegation_fakes import fake_agent, gone, scv_patched
from tests.batch_fakes import write_tasks
from tests.fakes import finish, scv_process, setup_fake_home, wait_for

# The fake answers "done <prompt>", sleeps forever on prompts starting "slow" unless told not to,
# and fails on prompts starting "fail". It logs each prompt it was given.
AGENT = """prompt="${{@: -1}}"
echo "$prompt" >> {log}
case "$prompt" in
  slow*) if [ ! -e {fast} ]; then echo $$ >> {pids}; sleep 300 & echo $! >> {pids}; wait; fi ;;
  fail*) echo "it broke" >&2; exit 3 ;;
esac
echo "{{\\"type\\":\\"thread.started\\",\\"thread_id\\":\\"thread-$$\\"}}"
printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"done"}}}}'
"""


def install_agent(tmp_path):
    paths = {name: tmp_path / f"{name}.txt" for name in ("log", "fast", "pids")}
    fake_agent(tmp_path, "codex", AGENT.format(**{k: str(v) for k, v in paths.items()}))
    return paths


def result_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_bad_lines_are_reported_by_number_and_nothing_starts(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    paths = install_agent(tmp_path)
    batch = tmp_path / "b.jsonl"
    batch.write_text("\n".join([
        json.dumps({"id": "ok", "agent": "codex", "prompt": "fine"}),
        "# a comment",
        "{not json",
        json.dumps({"id": "x", "agent": "zcode", "prompt": "p"}),
        json.dumps({"id": "ok", "agent": "codex", "prompt": "again"}),
        json.dumps({"id": "m", "agent": "codex", "prompt": "p", "model": "-rf"}),
        json.dumps({"id": "u", "prompt": "p", "colour": "red"}),
        json.dumps({"agent": "codex", "prompt": "p"}),
    ]) + "\n")
    proc = run_scv("batch", str(batch), "-C", str(workspace))
    assert proc.returncode == 2
    err = proc.stderr
    assert "has 6 bad line(s); nothing was started" in err
    assert "line 3: not a JSON object" in err
    assert 'line 4: agent "zcode" is not offered' in err
    assert "line 5: id 'ok' is already used on line 1" in err
    assert "line 6: " in err and "line 7: unknown field 'colour'" in err
    assert "line 8: the field 'id' is missing" in err
    assert not paths["log"].exists()            # no agent ran


def test_results_stream_to_stdout_and_the_exit_status_tells(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    install_agent(tmp_path)
    good = run_scv("batch", str(write_tasks(tmp_path / "a.jsonl", "one", "two", "three")), "--parallel", "2",
                   "-C", str(workspace))
    assert good.returncode == 0, good.stderr
    lines = [json.loads(line) for line in good.stdout.splitlines()]
    assert sorted(line["id"] for line in lines) == ["t0", "t1", "t2"]
    assert all(line["status"] == "completed" and line["reply"] == "done" for line in lines)
    assert not any("session" in line for line in lines)        # handles end with the batch
    assert list((scv_home / "state" / "conversations").iterdir()) == []   # their markers went with it
    assert (scv_home / "state" / "conversations").is_dir()
    assert "3/3 done, 0 running, 0 failed" in good.stderr
    # More at once than agent.max_conversations (2 here): each running task still has its conversation.
    (scv_home / "config.toml").write_text("[agent]\nmax_conversations = 2\n")
    wide = run_scv("batch", str(write_tasks(tmp_path / "w.jsonl", *[f"w{i}" for i in range(6)])), "--parallel", "6",
                   "-C", str(workspace))
    assert wide.returncode == 0, wide.stdout + wide.stderr
    bad = run_scv("batch", str(write_tasks(tmp_path / "b.jsonl", "one", "fail now")), "-C", str(workspace))
    assert bad.returncode == 1
    failed = [json.loads(line) for line in bad.stdout.splitlines() if '"t1"' in line][0]
    assert failed["status"] == "failed" and "it broke" in failed["stderr_tail"]


def test_an_interrupted_run_resumes_with_each_result_exactly_once(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    paths = install_agent(tmp_path)
    batch = write_tasks(tmp_path / "b.jsonl", "quick a", "slow b", "quick c", "slow d", "quick e", "quick f")
    output = tmp_path / "out.jsonl"
    with scv_process("batch", str(batch), "--output", str(output), "--parallel", "2", "-C", str(workspace)) as proc:
        # Both lanes end up held by the two slow tasks; the quick ones before them have finished.
        wait_for(lambda: paths["pids"].exists() and len(paths["pids"].read_text().split()) == 4)
        wait_for(lambda: output.exists() and len(result_lines(output)) == 2)
        out, err = finish(proc, signal.SIGINT)
    assert proc.returncode == 130, err
    first = result_lines(output)                # still valid JSON lines
    assert sorted((r["id"], r["status"]) for r in first) == [("t0", "completed"), ("t1", "cancelled"),
                                                             ("t2", "completed"), ("t3", "cancelled")]
    wait_for(lambda: gone([int(p) for p in paths["pids"].read_text().split()]))
    # A crash mid-line leaves a partial last line: that task simply runs again.
    with open(output, "a") as fh:
        fh.write('{"id": "t4", "status": "compl')
    paths["fast"].write_text("")
    again = run_scv("batch", str(batch), "--output", str(output), "-C", str(workspace))
    assert again.returncode == 0, again.stderr
    assert "2 task(s) already completed" in again.stderr
    final = result_lines(output)
    assert sorted(r["id"] for r in final) == ["t0", "t1", "t2", "t3", "t4", "t5"]
    assert all(r["status"] == "completed" for r in final)
    prompts = paths["log"].read_text().splitlines()
    assert prompts.count("quick a") == 1 and prompts.count("quick c") == 1      # not run again
    assert prompts.count("slow b") == 2 and prompts.count("quick e") == 1
    third = run_scv("batch", str(batch), "--output", str(output), "-C", str(workspace))
    assert third.returncode == 0 and result_lines(output) == final


def test_a_foreign_output_file_is_refused(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    install_agent(tmp_path)
    output = tmp_path / "notes.txt"
    output.write_text("shopping list\nmilk\n")
    proc = run_scv("batch", str(write_tasks(tmp_path / "b.jsonl", "one")), "--output", str(output),
                   "-C", str(workspace))
    assert proc.returncode == 2 and "line 1 is not a batch result" in proc.stderr
    assert output.read_text() == "shopping list\nmilk\n"


def test_sigterm_cancels_running_tasks_and_exits_143(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    paths = install_agent(tmp_path)
    output = tmp_path / "out.jsonl"
    with scv_process("batch", str(write_tasks(tmp_path / "b.jsonl", "slow x")), "--output", str(output),
                     "-C", str(workspace)) as proc:
        wait_for(lambda: paths["pids"].exists() and len(paths["pids"].read_text().split()) == 2)
        out, err = finish(proc, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert "(interrupted)" in err
    assert [(r["id"], r["status"]) for r in result_lines(output)] == [("t0", "cancelled")]


# `scv batch` in a process whose conversations each begin their turn 20 ms after `start` made them:
# the gap in which another lane's `start` could evict a conversation as the least recently used
# idle one, widened so that many lanes hit it in every run instead of a few tasks in a thousand.
LATE_FIRST_TURN = """import time
from scv.agents.conversations import Conversations
begin_turn = Conversations.begin_turn
def late(self, conversation):
    time.sleep(0.02)
    return begin_turn(self, conversation)
Conversations.begin_turn = late
"""


def test_no_task_loses_its_new_conversation_to_another_tasks_start(tmp_path, monkeypatch, workspace, scv_home):
    setup_fake_home(tmp_path, monkeypatch)
    install_agent(tmp_path)
    (scv_home / "config.toml").write_text("[agent]\nmax_conversations = 2\n")
    batch = write_tasks(tmp_path / "b.jsonl", *[f"p{i}" for i in range(96)])
    proc = subprocess.run(scv_patched(LATE_FIRST_TURN, "batch", str(batch), "--parallel", "8", "-C", str(workspace)),
                          capture_output=True, text=True, timeout=300, env=scv_env(), stdin=subprocess.DEVNULL)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    failed = [(line["id"], line.get("error")) for line in lines if line["status"] != "completed"]
    assert failed == [] and len(lines) == 96, proc.stderr[-2000:]
    assert proc.returncode == 0 and "96/96 done, 0 running, 0 failed" in proc.stderr


def test_the_final_tally_gives_the_real_rate_of_a_batch_shorter_than_a_second(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    install_agent(tmp_path)
    proc = run_scv("batch", str(write_tasks(tmp_path / "b.jsonl", "one", "two")), "--parallel", "2", "--quiet",
                   "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    tally = re.fullmatch(r"scv batch: 2/2 done, 0 running, 0 failed, 0 lost, ([0-9.]+) s, ([0-9.]+) tasks/s"
                             r"; usage: 2 turns, tokens unknown, cost unknown",
                         proc.stderr.strip())
    assert tally, proc.stderr
    elapsed, rate = float(tally.group(1)), float(tally.group(2))
    # Two tasks over the elapsed time as printed (a tenth, and the rate a hundredth, rounded off):
    # never 0.00 for a short batch.
    assert 2 / (elapsed + 0.05) - 0.005 <= rate <= 2 / max(elapsed - 0.05, 0.001) + 0.005, proc.stderr



def test_a_ray_that_raises_on_import_is_refused_in_one_sentence_before_anything_starts(tmp_path, monkeypatch,
                                                                                       workspace):
    setup_fake_home(tmp_path, monkeypatch)
    install_agent(tmp_path)
    # A broken install: importing ray raises what a protobuf version clash raises (not an ImportError).
    fake = tmp_path / "site" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise TypeError("Descriptors cannot be created directly.\\n'
                                      'If this call came from a _pb2.py file, your generated code is out of date")\n')
    token = tmp_path / "token"
    token.write_text("ab" * 32)
    token.chmod(0o600)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = scv_env(TMPDIR=str(temp))
    env["PYTHONPATH"] = f"{tmp_path / 'site'}:{env['PYTHONPATH']}"
    batch = write_tasks(tmp_path / "b.jsonl", "one")
    output = tmp_path / "out.jsonl"
    for where in ([], ["--address", "127.0.0.1:1", "--token-file", str(token)],
                  ["--address", "127.0.0.1:1", "--token-file", str(token), "--detach"]):
        proc = run_scv("batch", str(batch), "--engine", "ray", "--output", str(output), *where, "-C",
                       str(workspace), env=env)
        assert (proc.returncode, proc.stderr) == (2, "scv: Ray could not be imported (Descriptors cannot be created "
                                                     "directly.); reinstall scv[ray]\n"), where
        assert not output.exists() and list(temp.iterdir()) == []      # no private Ray's folder, no result
