"""`scv tool` and `scv tools` as real processes: exit statuses, stdout/stderr, stdin, terminal."""

import json
import os
import re
import pty
import select
import signal
import subprocess
import sys
import time

import click
import pytest
from click.testing import CliRunner

from scv.cli import main
from scv.tools.catalog import BUILTIN_SPECS
from tests.conftest import result_json, run_scv, scv_env
from tests.fakes import assert_gone, finish, scv_process, sleepers_command, unique_marker, wait_for_sleepers


def every_command(group=main, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield prefix + (name,)
        if isinstance(command, click.Group):
            yield from every_command(command, prefix + (name,))


@pytest.mark.parametrize("path", list(every_command()), ids=" ".join)
def test_every_command_has_help(path):
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_read_succeeds_with_exit_0(workspace):
    (workspace / "a.txt").write_text("hi\n")
    proc = run_scv("tool", "read", '{"path":"a.txt"}', "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["content"] == "hi\n"


def test_arguments_on_stdin(workspace):
    (workspace / "a.txt").write_text("hi\n")
    proc = run_scv("tool", "read", "-C", str(workspace), input='{"path":"a.txt","limit":1}')
    assert proc.returncode == 0 and result_json(proc)["content"] == "h"


def test_a_failed_command_exits_1_with_every_field(workspace):
    proc = run_scv("tool", "bash", '{"command":"echo no; exit 4"}', "--auto-approve", "-C", str(workspace))
    assert proc.returncode == 1
    value = result_json(proc)
    assert value["exit_code"] == 4 and value["output"] == "no\n" and "error" in value


@pytest.mark.parametrize("args, sentence", [
    (["tool", "nope", "{}"], "unknown tool 'nope'"),
    (["tool", "read", '{"path":"a","bogus":1}'], "read has no argument 'bogus'"),
    (["tool", "read", '{"path":7}'], "read argument 'path' is invalid"),
    (["tool", "read", "{not json"], "not valid JSON"),
    (["tool", "read", '{"path":"../x"}'], "'..'"),
    (["tool", "bash", '{"command":"true","timeout_seconds":20000}', "--auto-approve"], "over the ceiling"),
    (["tool", "bash", '{"command":"touch made"}'], "no terminal to ask"),
    (["tool", "read", '{"path":"config/.env"}'], "read needs approval (filesystem risk)"),
])
def test_refusals_exit_2_with_one_sentence_on_both_streams(workspace, args, sentence):
    proc = run_scv(*args, "-C", str(workspace))
    assert proc.returncode == 2
    assert sentence in result_json(proc)["error"]
    assert sentence in proc.stderr and proc.stderr.count("\n") == 1
    assert not (workspace / "made").exists()


def test_a_missing_workspace_is_a_usage_error(tmp_path):
    proc = run_scv("tool", "read", '{"path":"a"}', "-C", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_tools_lists_risk_and_schema():
    proc = run_scv("tools", "--json")
    assert proc.returncode == 0
    tools = {tool["name"]: tool for tool in json.loads(proc.stdout)["tools"]}
    assert tools["read"]["risk"] == "read_only" and tools["bash"]["risk"] == "process"
    timeout = tools["bash"]["schema"]["properties"]["timeout_seconds"]
    assert 14400 in [option.get("maximum") for option in timeout.get("anyOf", [timeout])]
    plain = run_scv("tools")
    assert "bash" in plain.stdout and "process" in plain.stdout


def test_tools_json_reports_a_broken_config_as_json(scv_home):
    (scv_home / "config.toml").write_text("[tools]\nbogus = 1\n")
    proc = run_scv("tools", "--json")
    assert proc.returncode == 2
    assert "unknown key tools.bogus" in result_json(proc)["error"]
    assert "unknown key tools.bogus" in proc.stderr
    plain = run_scv("tools")
    assert plain.returncode == 2 and plain.stdout == "" and "unknown key tools.bogus" in plain.stderr


def _run_on_terminal(args, answer, cwd):
    """Runs scv with a pseudo-terminal as stdin and stderr; types `answer` at the prompt."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "scv", *args], stdin=follower, stdout=subprocess.PIPE,
                            stderr=follower, env=scv_env(), cwd=cwd)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            seen += os.read(leader, 4096)
    os.write(leader, answer)
    out, _ = proc.communicate(timeout=60)
    os.close(leader)
    return proc.returncode, out, seen


@pytest.mark.parametrize("answer, code", [(b"y\n", 0), (b"n\n", 2)])
def test_on_a_terminal_scv_tool_asks(workspace, answer, code):
    returncode, out, prompt = _run_on_terminal(
        ["tool", "write", '{"path":"t.txt","content":"x","mode":"create"}', "-C", str(workspace)], answer,
        workspace)
    assert b"write (filesystem) wants to create t.txt" in prompt
    assert returncode == code
    assert (workspace / "t.txt").exists() is (code == 0)


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_cancels_the_call_and_its_result_is_still_printed(workspace, sig, status):
    marker = unique_marker()
    with scv_process("tool", "bash", json.dumps({"command": sleepers_command(marker)}), "--auto-approve",
                     "-C", str(workspace)) as proc:
        wait_for_sleepers(marker)
        out, err = finish(proc, sig)
    assert proc.returncode == status, err
    assert_gone(marker)
    value = json.loads(out)
    assert value["cancelled"] is True and "cancelled" in value["error"] and value["exit_code"] is None


def test_tools_lists_what_a_session_offers_from_the_catalog_without_importing_a_spec(tmp_path, monkeypatch,
                                                                                    scv_home):
    from tests.delegation_fakes import codex_reply_lines, fake_agent
    from tests.fakes import setup_fake_home
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", codex_reply_lines("hi"))

    def both(config: str) -> tuple[list[tuple[str, str, str]], str]:
        (scv_home / "config.toml").write_text(config)
        described = run_scv("tools", "--json")
        assert described.returncode == 0, described.stderr
        wanted = [(t["name"], t["risk"], t["description"].split(". ")[0]) for t in json.loads(described.stdout)["tools"]]
        plain = subprocess.run([sys.executable, "-v", "-m", "scv", "tools"], capture_output=True,
                               text=True, env=scv_env(), stdin=subprocess.DEVNULL, timeout=120)
        assert plain.returncode == 0, plain.stderr
        listed = [tuple(row.split(None, 2)) for row in plain.stdout.splitlines()]
        assert listed == wanted
        return listed, plain.stderr

    listed, imported = both('[web]\nsearch = "brave"\n')
    assert [name for name, _, _ in listed] == ["read", "write", "bash", "web_fetch", "web_search", "agent",
                                               "agent_wait", "agent_status", "agent_cancel"]
    specs = {spec.partition(":")[0] for spec, _ in BUILTIN_SPECS.values()}
    assert specs & set(re.findall(r"^import '([\w.]+)'", imported, re.M)) == set()     # no spec was imported
    listed, _ = both("[agent]\nmax_background = 0\n")
    assert [name for name, _, _ in listed] == ["read", "write", "bash", "web_fetch", "agent"]
