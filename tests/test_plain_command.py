"""A plain `scv exec`, `scv tool` or `scv tools` line runs without click (scv/entry.py) and ends as
the same command read by click does: the same output, the same sentence on stderr, the same exit
status. Each pair below runs a real process both ways; `-C.` (a joined short option) is a line
only click reads."""

import os
import subprocess
import sys

import pytest

from tests.conftest import run_scv, scv_env


def both_ways(*args: str, cwd) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    return run_scv(*args, cwd=cwd), run_scv(*args, "-C.", cwd=cwd)


def same_ending(plain: subprocess.CompletedProcess, clicked: subprocess.CompletedProcess) -> tuple:
    assert (plain.returncode, plain.stdout, plain.stderr) == (clicked.returncode, clicked.stdout, clicked.stderr)
    return plain.returncode, plain.stdout, plain.stderr


def test_a_tool_result_is_the_same_either_way(workspace):
    (workspace / "ok.txt").write_text("fine\n")
    code, out, err = same_ending(*both_ways("tool", "read", '{"path":"ok.txt"}', cwd=workspace))
    assert code == 0 and '"content":"fine\\n"' in out and err == ""


def test_a_refused_tool_call_is_the_same_either_way(workspace):
    code, out, err = same_ending(*both_ways("tool", "nope", "{}", cwd=workspace))
    assert code == 2 and out.startswith('{"error":"unknown tool') and err.startswith("scv: unknown tool 'nope'")


def test_an_exec_usage_error_is_the_same_either_way(workspace, scv_home):
    code, out, err = same_ending(*both_ways("exec", cwd=workspace))
    assert code == 2 and out == ""
    assert err == "scv: no prompt given; pass the task as an argument, or - to read it from stdin\n"


def test_an_exec_run_is_the_same_either_way(workspace, scv_home, tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"calls": [{"tool": "read", "args": {"path": "ok.txt"}}]}\n{"text": "read it"}\n')
    (workspace / "ok.txt").write_text("fine\n")
    code, out, err = same_ending(*both_ways("exec", "--script", str(script), "--json", cwd=workspace))
    assert code == 0 and '"type":"turn.completed"' in out and '"reply":"read it"' in out


@pytest.mark.parametrize("click_reads", [False, True], ids=["plain", "click"])
def test_a_closed_stdout_ends_with_status_1_and_no_traceback(workspace, click_reads):
    (workspace / "ok.txt").write_text("fine\n")
    read_end, write_end = os.pipe()
    os.close(read_end)              # whatever the command writes to stdout meets EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "scv", "tool", "read", '{"path":"ok.txt"}',
                               *(["-C."] if click_reads else [])], cwd=workspace, env=scv_env(), stdout=write_end,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_the_tool_listing_is_the_same_either_way(workspace, scv_home):
    code, out, err = same_ending(*both_ways("tools", cwd=workspace))
    assert code == 0 and out.startswith("read ") and err == ""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_bad_config_ends_the_listing_the_same_either_way(workspace, scv_home, as_json):
    (scv_home / "config.toml").write_text("[tools\n")
    code, out, err = same_ending(*both_ways("tools", *(["--json"] if as_json else []), cwd=workspace))
    assert code == 2 and err.startswith("scv: ") and (out.startswith('{"error":') if as_json else out == "")
