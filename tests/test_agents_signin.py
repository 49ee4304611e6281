"""`scv agents login | logout | status`: fake agent CLIs (bash scripts in a fake user's
~/.local/bin) record their argument vector, environment, working directory and what they read on
stdin, so the private home, the cleaned environment and the attached terminal are checked through
real `python -m scv` processes. No key ever appears in any output."""

import fcntl
import os
import pty
import select
import stat
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_scv, scv_env
from tests.delegation_fakes import fake_agent

INHERITED_KEYS = {"OPENAI_API_KEY": "sk-inherited-openai-1111", "ANTHROPIC_API_KEY": "sk-ant-inherited-2222",
                  "XAI_API_KEY": "xai-inherited-3333", "CODEX_HOME": "/elsewhere/codex",
                  "GROK_HOME": "/elsewhere/grok"}
# Records what the fake read on its stdin: a terminal-attached login inherits ours.
def reads_stdin(tmp_path: Path) -> str:
    return f'IFS= read -r line || line="<eof>"; printf "%s" "$line" > {tmp_path}/log/stdin.$$\n'


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def stdin_lines(tmp_path: Path) -> list[str]:
    return [p.read_text() for p in sorted((tmp_path / "log").glob("stdin.*"))]


@pytest.mark.parametrize("command", ["login", "logout", "status", "import"])
def test_every_command_has_help(command):
    proc = run_scv("agents", command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: scv agents {command}")


@pytest.mark.parametrize("agent,own_args,state_var,state", [
    ("claude", ["auth", "login"], None, ""),
    ("codex", ["login"], "CODEX_HOME", ""),
    ("grok", ["login"], "GROK_HOME", ".grok"),
])
def test_login_runs_the_agents_own_command_in_its_private_home(user_home, tmp_path, scv_home, agent, own_args,
                                                               state_var, state):
    fake = fake_agent(tmp_path, agent, reads_stdin(tmp_path) + "exit 7\n")
    proc = run_scv("agents", "login", agent, "--", "--device-auth", input="typed-at-terminal\n",
                   env=scv_env(**INHERITED_KEYS, SCV_HOME=str(scv_home)))
    assert proc.returncode == 7, proc.stderr            # its exit status becomes ours
    assert fake.calls() == [[*own_args, "--device-auth"]]
    env = fake.env()
    home = scv_home / "agents" / agent
    assert env["HOME"] == str(home) and fake.cwd() == str(home)
    assert mode(home) == 0o700
    assert not [name for name in env if name.endswith("_API_KEY")]
    assert env["XDG_CONFIG_HOME"] == str(home / ".config")
    assert "SCV_PARENT" not in env and "SCV_DELEGATION_DEPTH" not in env
    if state_var:
        assert env[state_var] == str(home / state if state else home)
    assert stdin_lines(tmp_path) == ["typed-at-terminal"]   # stdin is ours, not /dev/null


@pytest.mark.parametrize("agent,own_args", [("claude", ["auth", "logout"]), ("codex", ["logout"]),
                                            ("grok", ["logout"])])
def test_logout_runs_the_agents_own_command(user_home, tmp_path, scv_home, agent, own_args):
    fake = fake_agent(tmp_path, agent, "exit 0\n")
    proc = run_scv("agents", "logout", agent, env=scv_env(**INHERITED_KEYS, SCV_HOME=str(scv_home)))
    assert proc.returncode == 0, proc.stderr
    assert fake.calls() == [own_args]
    assert fake.env()["HOME"] == str(scv_home / "agents" / agent)


def test_login_under_a_real_terminal_gives_the_agent_that_terminal(user_home, tmp_path, scv_home):
    fake = fake_agent(tmp_path, "codex", f'if [ -t 0 ] && [ -t 1 ]; then echo tty > {tmp_path}/log/tty; '
                                         'fi\nexit 0\n')
    status, _ = run_in_terminal(["agents", "login", "codex"], [], scv_home)
    assert status == 0
    assert (tmp_path / "log" / "tty").read_text().strip() == "tty"
    assert fake.calls() == [["login"]]


def test_unknown_and_missing_agents_are_one_sentence(user_home, tmp_path):
    proc = run_scv("agents", "login", "gemini")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "unknown agent 'gemini'" in proc.stderr and "claude, codex, grok, dsh, pi" in proc.stderr
    proc = run_scv("agents", "login", "claude")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "claude is not installed" in proc.stderr
    proc = run_scv("agents", "login", "codex", "--base-url", "https://x.example")
    assert proc.returncode == 2 and "login pi only" in proc.stderr


DSH_KEY = "sk-dsh-secret-0123456789"


def test_dsh_login_stores_the_key_from_stdin_privately(user_home, tmp_path, scv_home):
    proc = run_scv("agents", "login", "dsh", input=DSH_KEY + "\n")
    assert proc.returncode == 0, proc.stderr
    path = scv_home / "agents" / "dsh" / ".dsh" / ".credentials.yaml"
    assert 'DEEPSEEK_API_KEY: "' + DSH_KEY + '"' in path.read_text()
    assert mode(path) == 0o600 and mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == [".credentials.yaml"]     # no temporary left
    fake_agent(tmp_path, "dsh", "exit 0\n")
    status = run_scv("agents", "status")
    assert "dsh    signed in (API key stored)" in status.stdout
    for output in (proc.stdout, proc.stderr, status.stdout, status.stderr):
        assert DSH_KEY not in output
    proc = run_scv("agents", "logout", "dsh")
    assert proc.returncode == 0 and not path.exists()
    assert "dsh    signed out (scv agents login dsh)" in run_scv("agents", "status").stdout


def test_dsh_refuses_a_key_given_as_an_argument(user_home, scv_home):
    proc = run_scv("agents", "login", "dsh", "--", DSH_KEY, input=DSH_KEY + "\n")
    assert proc.returncode == 2 and "never accepted as an argument" in proc.stderr
    assert DSH_KEY not in proc.stderr + proc.stdout
    assert not (scv_home / "agents" / "dsh" / ".dsh" / ".credentials.yaml").exists()


@pytest.mark.parametrize("given,sentence", [("", "stdin ended before the DeepSeek API key was given"),
                                            ("\n", "no DeepSeek API key was given"),
                                            ("sk one two\n", "contains spaces")])
def test_dsh_refuses_an_empty_or_broken_key(user_home, scv_home, given, sentence):
    proc = run_scv("agents", "login", "dsh", input=given)
    assert proc.returncode == 2 and sentence in proc.stderr
    assert "one two" not in proc.stderr


def run_in_terminal(args: list[str], answers: list[str], scv_home: Path) -> tuple[int, str]:
    """Runs scv with a pseudo-terminal as its controlling terminal and stdin/stdout/stderr; types
    each answer after a prompt appears. Returns the exit status and everything the terminal showed."""
    master, slave = pty.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    child = subprocess.Popen([sys.executable, "-m", "scv", *args], stdin=slave, stdout=slave, stderr=slave,
                             env=scv_env(SCV_HOME=str(scv_home)), preexec_fn=controlling_terminal, cwd=ROOT)
    os.close(slave)
    shown, pending, deadline = b"", list(answers), time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
            if pending and shown.rstrip().endswith(b":"):
                os.write(master, pending.pop(0).encode() + b"\r")
        elif child.poll() is not None:
            break
    os.close(master)
    return child.wait(timeout=30), shown.decode(errors="replace")


def test_dsh_login_at_a_terminal_does_not_echo_the_key(user_home, scv_home):
    status, shown = run_in_terminal(["agents", "login", "dsh"], [DSH_KEY], scv_home)
    assert status == 0, shown
    assert "DeepSeek API key (not shown):" in shown and DSH_KEY not in shown
    path = scv_home / "agents" / "dsh" / ".dsh" / ".credentials.yaml"
    assert DSH_KEY in path.read_text()


def test_a_status_command_that_never_answers_is_stopped_even_if_a_descendant_keeps_its_pipes(tmp_path,
                                                                                             monkeypatch):
    import psutil

    from scv.agents import login
    monkeypatch.setattr(login, "STATUS_TIMEOUT_SECONDS", 0.5)
    marker = f"59.{os.getpid()}{time.monotonic_ns() % 100000}"     # a sleep only this test starts
    # The escapee leaves the process group and keeps stdout and stderr open.
    script = f"setsid sleep {marker} & sleep 60\n"
    try:
        with pytest.raises(login.StatusFailed, match="did not answer within 0.5 seconds"):
            login.run_captured(["bash", "-c", script], dict(os.environ), tmp_path)
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if proc.info["cmdline"] == ["sleep", marker]:
                proc.kill()     # this test's own escapee, found by its unique name
