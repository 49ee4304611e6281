"""`scv exec --script`: the offline provider, exit statuses, approvals without a terminal, and
cancellation (SIGINT, SIGTERM, --timeout) that leaves no process behind. Real processes."""

import json
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_scv, scv_env
from tests.fakes import (assert_gone, events, finish, long_script, scv_process, unique_marker, wait_for_sleepers,
                         write_script)


def test_readme_first_command_runs_the_health_check(workspace):
    first = next(line.strip() for line in (ROOT / "README.md").read_text().splitlines() if line.strip()
                 and not line.startswith("#"))
    assert first.startswith("bin/scv exec --script examples/health-check.jsonl")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / "README.md").write_text("# Demo\n\nA demo project.\n")
    (workspace / "main.py").write_text("print('hi')  # TODO: say more\n")
    (workspace / ".git" / "info" / "exclude").write_text("ignored.log\n")
    (workspace / "ignored.log").write_text("x" * 5000)
    proc = run_scv("exec", "--script", str(ROOT / "examples" / "health-check.jsonl"), "--auto-approve",
                   "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    reports = list((workspace / "scv-reports").glob("health-*.md"))
    assert len(reports) == 1
    report = reports[0].read_text()
    assert "branch:" in report and "uncommitted changes: 2" in report
    assert "- README.md: 24 bytes" in report and "A demo project." in report
    assert "TODO/FIXME/XXX markers: 1" in report
    # Every file counts, however small; a file git ignores does not.
    assert "files: 2\n" in report
    assert "largest files (bytes):\n        30  main.py\n        24  README.md\nTODO" in report
    assert "- LICENSE: missing\n- .gitignore: missing\n" in report       # said so, not a failed call
    assert "(no " not in report
    assert f"the report is scv-reports/{reports[0].name}" in proc.stdout


def test_json_events_and_result_references(workspace, tmp_path):
    (workspace / "in.txt").write_text("payload")
    script = write_script(tmp_path / "s.jsonl",
                          {"text": "reading", "calls": [{"id": "r", "tool": "read", "args": {"path": "in.txt"}}]},
                          {"text": "got {{r.content}} ({{r.total_bytes}} bytes, ok={{r.ok}})"})
    proc = run_scv("exec", "--script", str(script), "--json", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    assert [e["type"] for e in seen] == ["turn.started", "assistant.delta", "assistant.text", "tool.started",
                                         "tool.completed", "assistant.delta", "assistant.text", "turn.completed"]
    assert seen[3]["risk"] == "read_only" and seen[3]["summary"] == "read in.txt"
    assert seen[-1]["reply"] == "got payload (7 bytes, ok=true)"
    assert all(e["turn_id"] == "turn-1" for e in seen)


def test_prompt_from_stdin_and_missing_prompt(workspace, tmp_path):
    script = write_script(tmp_path / "s.jsonl", {"text": "done"})
    proc = run_scv("exec", "-", "--script", str(script), "--json", "-C", str(workspace), input="the task\n")
    assert proc.returncode == 0 and events(proc)[0]["prompt"] == "the task\n"
    proc = run_scv("exec", "-C", str(workspace))
    assert proc.returncode == 2 and "no prompt given" in proc.stderr


@pytest.mark.parametrize("content, sentence", [
    ('{"text": "x", "cals": []}', "line 1 is not a model turn"),
    ('{"text": "x", "calls": [{"tool": "read"}]}', "ends with tool calls"),
    ('{"text": "{{nope.content}}"}', "no earlier call has the id 'nope'"),
    ('not json', "line 1 is not a model turn"),
    ('# only a comment', "has no model turns"),
])
def test_broken_script_is_a_usage_error(workspace, tmp_path, content, sentence):
    script = tmp_path / "bad.jsonl"
    script.write_text(content + "\n")
    proc = run_scv("exec", "--script", str(script), "-C", str(workspace))
    assert proc.returncode == 2
    assert sentence in proc.stderr and "\n" not in proc.stderr.strip()


def test_missing_script_file(workspace, tmp_path):
    proc = run_scv("exec", "--script", str(tmp_path / "absent.jsonl"), "-C", str(workspace))
    assert proc.returncode == 2 and "cannot be read" in proc.stderr


@pytest.mark.parametrize("args, sentence", [
    (["--script", "absent.jsonl"], "cannot be read"),
    (["--timeout", "0", "hi"], "Invalid value for '--timeout'"),
    (["--no-such-option", "hi"], "--no-such-option"),
])
def test_with_json_usage_errors_are_one_error_event(workspace, args, sentence):
    proc = run_scv("exec", "--json", *args, "-C", str(workspace))
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["type"] == "error"
    assert sentence in json.loads(lines[0])["error"] and sentence in proc.stderr


def test_approval_is_denied_without_a_terminal_and_the_model_is_told(workspace, tmp_path):
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "w", "tool": "write",
                                      "args": {"path": "out.txt", "content": "x", "mode": "create"}}]},
                          {"text": "{{w.error}}"})
    proc = run_scv("exec", "--script", str(script), "--json", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    requested = next(e for e in seen if e["type"] == "approval.requested")
    assert requested["tool"] == "write" and requested["risk"] == "filesystem"
    assert next(e for e in seen if e["type"] == "approval.resolved")["approved"] is False
    assert "no terminal to ask" in seen[-1]["reply"] and "--auto-approve" in seen[-1]["reply"]
    assert not (workspace / "out.txt").exists()
    proc = run_scv("exec", "--script", str(script), "--auto-approve", "-C", str(workspace))
    assert proc.returncode == 0 and (workspace / "out.txt").read_text() == "x"


def test_policy_never_denies_before_asking(workspace, tmp_path, scv_home):
    (scv_home / "config.toml").write_text('[tools]\napproval_policy = "never"\n')
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"id": "b", "tool": "bash", "args": {"command": "true"}}]},
                          {"text": "{{b.error}}"})
    proc = run_scv("exec", "--script", str(script), "--auto-approve", "--json", "-C", str(workspace))
    assert proc.returncode == 0
    seen = events(proc)
    assert not any(e["type"] == "approval.requested" for e in seen)
    assert 'approval_policy is "never"' in seen[-1]["reply"]


def test_turn_limit_from_config(workspace, tmp_path, scv_home):
    (scv_home / "config.toml").write_text("[agent]\nmax_turns = 2\n")
    (workspace / "a").write_text("a")
    call = {"calls": [{"tool": "read", "args": {"path": "a"}}]}
    script = write_script(tmp_path / "s.jsonl", call, call, call, {"text": "never reached"})
    proc = run_scv("exec", "--script", str(script), "-C", str(workspace))
    assert proc.returncode == 1 and "agent.max_turns" in proc.stderr


# --- cancellation -------------------------------------------------------------------------------

@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_cancels_the_running_call_and_stops_its_processes(workspace, tmp_path, sig, status):
    marker = unique_marker()
    with scv_process("exec", "--script", str(long_script(tmp_path, marker)), "--auto-approve", "--json",
                     "-C", str(workspace)) as proc:
        wait_for_sleepers(marker)
        out, err = finish(proc, sig)
    assert proc.returncode == status, err
    assert_gone(marker)
    seen = events(out)
    completed = next(e for e in seen if e["type"] == "tool.completed")
    assert completed["result"]["cancelled"] is True
    assert seen[-1]["type"] == "turn.failed" and seen[-1]["reason"] == "interrupted"


def test_timeout_cancels_with_its_own_status(workspace, tmp_path):
    marker = unique_marker()
    with scv_process("exec", "--script", str(long_script(tmp_path, marker)), "--auto-approve", "--timeout", "1.5",
                     "-C", str(workspace)) as proc:
        out, err = finish(proc)
    assert proc.returncode == 124, err
    assert "the turn was cancelled (timeout)" in err
    assert_gone(marker)


def test_approval_is_asked_on_a_terminal(workspace, tmp_path):
    import os
    import pty
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "w", "tool": "write",
                                      "args": {"path": "yes.txt", "content": "y", "mode": "create"}}]},
                          {"calls": [{"id": "v", "tool": "write",
                                      "args": {"path": "no.txt", "content": "n", "mode": "create"}}]},
                          {"text": "first ok={{w.ok}}, second ok={{v.ok}}"})
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "scv", "exec", "--script", str(script), "-C", str(workspace)],
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=scv_env())
        os.write(master, b"y\n")
        os.write(master, b"n\n")
        out, err = proc.communicate(timeout=30)
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, err
    assert err.count("Allow? [y/N]") == 2
    assert out.strip() == "first ok=true, second ok=false"
    assert (workspace / "yes.txt").exists() and not (workspace / "no.txt").exists()
