"""The `agent` tool end to end through real workers and fake agent CLIs that replay captures of
the real programs: every status, the private environment, conversations across turns, and the
processes a CLI leaves behind."""

import os
import threading
import time
from pathlib import Path

import pytest

from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from tests.agent_fakes import install, on_cli


@pytest.fixture
def agents(tmp_path, user_home, scv_home):
    """agents(name) -> FakeAgent installed in the fake user's ~/.local/bin, each on its CLI."""
    config = scv_home / "config.toml"
    if not config.exists():
        config.write_text(on_cli())
    return lambda name: install(user_home / ".local" / "bin", name, tmp_path / "log" / name)


@pytest.fixture
def write_config(scv_home):
    def write(text: str) -> None:
        (scv_home / "config.toml").write_text(on_cli(text))
    return write


def call(runner, raw: dict, **options) -> tuple[bool, dict]:
    result = runner.run(runner.prepare("agent", raw), **options)
    return result.ok, result.value


BASE_KEYS = {"agent", "status", "reply", "usage", "exit_code", "stderr_tail", "truncated"}


def test_claude_reply_usage_and_conversation_across_turns(agents, make_runner):
    claude = agents("claude")
    claude.replay("claude", "resume_turn1", paced=True)
    runner = make_runner()
    lines = []
    ok, first = call(runner, {"agent": "claude", "prompt": "say hi"}, on_progress=lines.append)
    assert ok, first
    assert BASE_KEYS <= set(first)
    assert first["status"] == "completed" and first["reply"] == "Hello from the fake backend."
    assert first["usage"] == {"turns": 1, "input_tokens": 11, "output_tokens": 5, "cached_input_tokens": 0,
                              "cost_usd": 0.000144, "cost_source": "reported"}
    assert first["session"] == "claude-1" and first["turn"] == 1
    assert not any(key.startswith("_") for key in first)
    assert "4e992a71" not in str(first)                 # the CLI's own id never reaches the model
    argv = claude.calls()[0]
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--session-id"]
    assert argv[-1] == "say hi"
    claude.replay("claude", "resume_turn2")
    ok, second = call(runner, {"session": "claude-1", "prompt": "and again"})
    assert ok and second["session"] == "claude-1" and second["turn"] == 2
    # A resumed session's total_cost_usd (0.000288) covers both turns: the result shows this turn's.
    assert second["usage"]["cost_usd"] == pytest.approx(0.000144)
    resumed = claude.calls()[1]
    # The second turn resumes the session the CLI reported, not the id SCV chose for turn 1.
    assert resumed[4:6] == ["--resume", "4e992a71-04ed-45bb-a2db-bf4813e00ce4"]
    assert "--session-id" not in resumed


def test_codex_resume_argument_order_and_turn_usage(agents, make_runner):
    codex = agents("codex")
    codex.replay("codex", "resume_0_first")
    runner = make_runner()
    ok, first = call(runner, {"agent": "codex", "prompt": "hi", "model": "gpt-5.5", "effort": "high"})
    assert ok and first["reply"] == "hi from fake" and first["session"] == "codex-1"
    argv = codex.calls()[0]
    assert argv[:3] == ["exec", "--json", "-o"]
    assert argv[4:] == ["-m", "gpt-5.5", "-c", 'model_reasoning_effort="high"', "hi"]
    codex.replay("codex", "resume_1_opts_after_resume")
    ok, second = call(runner, {"session": "codex-1", "prompt": "more"})
    assert ok and second["turn"] == 2
    assert codex.calls()[1][4:] == ["resume", "01a23691-2d39-76f3-96e6-26722adb2aab", "more"]
    # Codex reports the thread's running total after resume; the result shows this turn's share.
    assert second["usage"] == {"turns": 1, "input_tokens": 100, "output_tokens": 8, "cached_input_tokens": 20,
                               "cost_usd": None, "cost_source": None}


def test_codex_o_file_is_the_fallback_reply_and_is_deleted(agents, make_runner, scv_home):
    codex = agents("codex")
    codex.write("prev=''; for a in \"$@\"; do if [ \"$prev\" = -o ]; then printf 'from the file' > \"$a\"; "
                "echo \"$a\" > \"$HOME/ofile\"; fi; prev=$a; done\n"
                "echo '{\"type\":\"thread.started\",\"thread_id\":\"t-1\"}'\n"
                "echo '{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}'\n")
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "hi"})
    assert ok and value["reply"] == "from the file"
    ofile = Path((scv_home / "agents" / "codex" / "ofile").read_text().strip())
    assert ofile.is_relative_to(scv_home / "agents" / "codex" / "tmp")
    assert not ofile.parent.exists()


def test_pi_tool_turn_progress_and_session_continuation(agents, make_runner):
    pi = agents("pi")
    pi.replay("pi", "tool_bash")
    (Path(os.environ["SCV_HOME"]) / "agents" / "pi" / ".pi" / "agent").mkdir(parents=True)
    (Path(os.environ["SCV_HOME"]) / "agents" / "pi" / ".pi" / "agent" / "auth.json").write_text(
        '{"scv": {"type": "api_key", "key": "k"}}')
    runner = make_runner()
    lines = []
    ok, value = call(runner, {"agent": "pi", "prompt": "run echo hello"}, on_progress=lines.append)
    assert ok and value["reply"] == "The command printed: hello"
    assert value["usage"] == {"turns": 2, "input_tokens": 200, "output_tokens": 16, "cached_input_tokens": 40,
                              "cost_usd": 0.0, "cost_source": "reported"}
    assert lines == ["$ echo hello"]
    assert "hello\n" not in " ".join(lines)
    pi.replay("pi", "text_defaults_from_settings")
    ok, again = call(runner, {"session": value["session"], "prompt": "more"})
    assert ok and again["turn"] == 2
    assert pi.calls()[1][3:6] == ["--session", "01a23693-4b6b-72f1-8288-72de86379340", "more"]


@pytest.mark.parametrize("agent, capture, error, hinted, fallback", [
    ("claude", "signed_out", "Not logged in · Please run /login", True, True),
    ("claude", "http_401_max_retries_0", "Invalid API key · Fix external API key", True, True),
    ("codex", "error_err401", "unexpected status 401 Unauthorized", True, True),
    ("codex", "error_unknown_model", "The requested model 'no-such-model' does not exist.", False, True),
    ("codex", "text_nogit", "Not inside a trusted directory", False, False),
    ("claude", "resume_reuse_session_id", "is already in use", False, False),
    ("pi", "error_err401", "401 Incorrect API key provided", True, True),
    ("pi", "pi_print_json_signed_out", "No API key found for the selected model.", True, True),
])
def test_failures_carry_error_hint_and_fallback(agents, make_runner, agent, capture, error, hinted, fallback,
                                                scv_home):
    fake = agents(agent)
    agents("codex" if agent != "codex" else "claude")       # another agent on offer for the fallback
    if agent == "pi":
        (scv_home / "agents" / "pi" / ".pi" / "agent").mkdir(parents=True)
        (scv_home / "agents" / "pi" / ".pi" / "agent" / "auth.json").write_text('{"x": {"type": "api_key"}}')
    fake.replay(agent, capture)
    ok, value = call(make_runner(), {"agent": agent, "prompt": "hi"})
    assert not ok and value["status"] == "failed", value
    assert error in value["error"]
    assert (f"scv agents login {agent}" in value.get("hint", "")) == hinted
    if capture == "text_nogit":
        assert value["hint"].startswith("codex runs only inside a git repository")
    elif not hinted:
        assert "hint" not in value
    assert ("fallback" in value) == fallback
    if fallback:
        other = "codex" if agent != "codex" else "claude"
        assert value["fallback"].endswith(f"Other agents are available: {other}. Call agent again with one of them.")
    if capture in ("text_nogit", "resume_reuse_session_id"):
        assert "session" not in value   # a first turn that failed before the CLI reported a session is forgotten
    else:
        assert value["session"] == f"{agent}-1"


def test_declined_gets_the_grok_note_and_no_fallback(agents, make_runner, scv_home):
    agents("claude").replay("claude", "refusal")
    agents("grok")
    (scv_home / "agents" / "grok" / ".grok").mkdir(parents=True)
    (scv_home / "agents" / "grok" / ".grok" / "auth.json").write_text('{"token": "x"}')
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "something"})
    assert value["status"] == "declined" and "fallback" not in value
    assert "safeguards flagged" in value["reply"]
    assert 'call agent again with agent "grok" and the same request' in value["note"]


def test_declined_without_grok_tells_the_user(agents, make_runner):
    agents("claude").replay("claude", "refusal")
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "something"})
    assert value["status"] == "declined"
    assert "do not pass the request to another agent on your own" in value["note"]


def test_plain_text_agent_reply_environment_and_depth(agents, make_runner, scv_home, write_config):
    grok = agents("grok")
    (scv_home / "agents" / "grok" / ".grok").mkdir(parents=True)
    (scv_home / "agents" / "grok" / ".grok" / "auth.json").write_text('{"token": "x"}')
    write_config('[agents.grok]\npermissions = "full"\n')
    grok.write("echo 'line one'\necho 'the answer'\necho 'some warning' >&2\n")
    ok, value = call(make_runner(), {"agent": "grok", "prompt": "what's new", "model": "grok-5",
                                     "effort": "low"})
    assert ok and value["reply"] == "line one\nthe answer\n" and value["stderr_tail"] == "some warning\n"
    assert value["usage"] is None and "session" not in value
    assert grok.calls()[0] == ["--always-approve", "-m", "grok-5", "--reasoning-effort", "low", "-p", "what's new"]
    env = grok.env()
    home = scv_home / "agents" / "grok"
    assert env["HOME"] == str(home) and env["GROK_HOME"] == str(home / ".grok")
    assert env["XDG_CONFIG_HOME"] == str(home / ".config") and env["SCV_HOME"] == str(home / ".scv")
    assert env["GROK_DISABLE_AUTOUPDATER"] == "1"
    assert env["SCV_DELEGATION_DEPTH"] == "1"
    instance, session, handle = env["SCV_PARENT"].split("/")
    assert instance.startswith("scv-") and session.startswith("s-") and handle.startswith("grok-")


def test_failed_plain_text_run_reports_its_closing_output(agents, make_runner, scv_home):
    dsh = agents("dsh")
    (scv_home / "agents" / "dsh" / ".dsh").mkdir(parents=True)
    (scv_home / "agents" / "dsh" / ".dsh" / ".credentials.yaml").write_text("refs:\n  DEEPSEEK_API_KEY: x\n")
    dsh.write("echo 'working'\necho 'MISSING_CREDENTIAL: no key' >&2\nexit 3\n")
    ok, value = call(make_runner(), {"agent": "dsh", "prompt": "go"})
    assert value["status"] == "failed" and value["exit_code"] == 3
    assert value["error"] == "working"
    assert "scv agents login dsh" in value["hint"]
    assert dsh.calls()[0] == ["--profile", "headless", "go"]


def test_cwd_selection_and_symlink_escape(agents, make_runner, workspace, tmp_path):
    claude = agents("claude")
    claude.replay("claude", "text_reply")
    (workspace / "proj").mkdir()
    runner = make_runner()
    ok, value = call(runner, {"agent": "claude", "prompt": "hi", "cwd": "proj"})
    assert ok and claude.cwd() == str(workspace / "proj")
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    ok, value = call(runner, {"agent": "claude", "prompt": "hi", "cwd": "escape"})
    assert not ok and "resolves outside the workspace" in value["error"]
    ok, value = call(runner, {"agent": "claude", "prompt": "hi", "cwd": "missing"})
    assert not ok and "not an existing directory" in value["error"]
    assert len(claude.calls()) == 1                     # neither launched anything
    assert "fallback" not in value


def test_an_agent_killed_mid_turn(agents, make_runner):
    claude = agents("claude")
    claude.write("head -n1 " + str(Path(__file__).parent / "fixtures/agents/claude/text_reply.jsonl")
                 + "\nkill -KILL $$\n")
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "hi"})
    assert value["status"] == "failed" and "SIGKILL" in value["error"]
    assert "session" in value                   # the CLI reported its session before it died


def test_timeout_keeps_the_conversation_resumable(agents, make_runner):
    codex = agents("codex")
    codex.write("echo '{\"type\":\"thread.started\",\"thread_id\":\"t-9\"}'\nsleep 30\n")
    runner = make_runner()
    ok, value = call(runner, {"agent": "codex", "prompt": "long", "timeout_seconds": 1})
    assert value["status"] == "timeout" and "timeout of 1 s" in value["error"]
    assert value["session"] == "codex-1"
    codex.replay("codex", "text")
    ok, again = call(runner, {"session": "codex-1", "prompt": "continue"})
    assert ok and codex.calls()[1][-3:] == ["resume", "t-9", "continue"]


def test_cancelled_run(agents, make_runner):
    codex = agents("codex")
    codex.write("echo '{\"type\":\"turn.started\"}'\nsleep 30\n")
    cancel = Cancellation()
    threading.Timer(0.5, cancel.cancel).start()
    started = time.monotonic()
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "long"}, cancel=cancel)
    assert value["status"] == "cancelled" and time.monotonic() - started < 10
    assert "session" not in value               # no thread was reported: forgotten


def test_a_cli_that_never_exits_after_its_result(agents, make_runner):
    agents("claude").replay("claude", "text_reply", after="sleep 60")
    started = time.monotonic()
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "hi"})
    assert ok and value["status"] == "completed" and value["reply"] == "Hello from the fake backend."
    assert time.monotonic() - started < 20


def test_a_grandchild_holding_stdout_does_not_hold_the_call(agents, make_runner, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    agents("codex").replay("codex", "text", before=f"(setsid sleep 60 & echo $! > {pid_file})")
    started = time.monotonic()
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "hi"})
    assert ok and value["reply"] == "hi from fake"
    assert time.monotonic() - started < 20
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"


def test_reply_bounded_on_a_character_boundary(agents, make_runner, write_config):
    write_config("[tools]\noutput_limit_bytes = 1024\n")
    agents("grok")
    dsh = agents("dsh")
    (Path(os.environ["SCV_HOME"]) / "agents/dsh/.dsh").mkdir(parents=True)
    (Path(os.environ["SCV_HOME"]) / "agents/dsh/.dsh/.credentials.yaml").write_text("refs:\n  DEEPSEEK_API_KEY: x\n")
    dsh.write("for i in $(seq 1 600); do printf 'é'; done\n")
    ok, value = call(make_runner(), {"agent": "dsh", "prompt": "go"})
    assert ok and value["truncated"] is True
    assert value["reply"] == "é" * 512


def test_stderr_keeps_its_last_2_kib_and_a_cut_counts_as_truncated(agents, make_runner):
    agents("codex").replay("codex", "text", before="for i in $(seq 1 300); do echo \"noise line $i\" >&2; done")
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "hi"})
    assert ok and value["reply"] == "hi from fake"
    tail = value["stderr_tail"]
    assert len(tail.encode()) == 2048 and tail.endswith("Reading additional input from stdin...\n")
    assert "noise line 1\n" not in tail and value["truncated"] is True
    agents("codex").replay("codex", "text")
    ok, quiet = call(make_runner(), {"agent": "codex", "prompt": "hi"})
    assert ok and quiet["truncated"] is False and quiet["stderr_tail"].endswith("from stdin...\n")


def test_structured_stream_without_json_falls_back_to_text(agents, make_runner):
    agents("claude").write("echo 'plain words'\n")
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "hi"})
    assert ok and value["reply"] == "plain words\n"


def test_oversized_lines_are_skipped(agents, make_runner, tmp_path):
    big = tmp_path / "big.jsonl"
    with open(big, "w") as fh:
        fh.write('{"type":"item.completed","item":{"type":"agent_message","text":"' + "x" * (5 << 20) + '"}}\n')
        fh.write('{"type":"item.completed","item":{"type":"agent_message","text":"small"}}\n')
        fh.write('{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}\n')
    agents("codex").write(f"cat {big}\n")
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "hi"})
    assert ok and value["reply"] == "small"


def test_environment_drops_credentials_and_vendor_state(tmp_path, scv_home):
    from tests.conftest import result_json, run_scv, scv_env
    user_home = tmp_path / "user"
    codex = install(user_home / ".local" / "bin", "codex", tmp_path / "log")
    codex.replay("codex", "text", before=f"readlink /proc/$$/fd/0 > {tmp_path / 'stdin'}")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    removed = dict(OPENAI_API_KEY="sk-parent", ANTHROPIC_AUTH_TOKEN="t", ANTHROPIC_BASE_URL="http://a",
                   CLAUDE_CODE_OAUTH_TOKEN="o", OPENAI_BASE_URL="http://x", CODEX_BASE_URL="http://c",
                   PI_CODING_AGENT_DIR="/p", MY_SERVICE_API_KEY="k", CLAUDE_CONFIG_DIR="/c", GROK_HOME="/g",
                   DSH_PERMISSION_MODE="danger-full-access", DEEPSEEK_BASE_URL="http://d", XAI_API_BASE="http://g",
                   SCV_PROVIDER="p", SCV_MODEL="m")
    env = scv_env(HOME=str(user_home), PATH="/usr/bin:/bin", SCV_HOME=str(scv_home), CODEX_HOME="/elsewhere",
                  XDG_CONFIG_HOME="/xdg", SCV_PARENT="scv-1/s-1/claude-aa", KEEP_ME="yes", **removed)
    proc = run_scv("tool", "agent", '{"agent":"codex","prompt":"hi"}', "--auto-approve", "-C", str(workspace),
                   env=env)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["reply"] == "hi from fake"
    seen = codex.env()
    for name in removed:
        assert name not in seen, name
    assert seen["CODEX_HOME"] == str(scv_home / "agents" / "codex")
    assert seen["XDG_CONFIG_HOME"] == str(scv_home / "agents" / "codex" / ".config")
    assert (tmp_path / "stdin").read_text().strip() == "/dev/null"
    assert seen["KEEP_ME"] == "yes"
    assert seen["SCV_PARENT"].startswith("scv-1/s-1/claude-aa,scv-")
    assert seen["SCV_CALL"]
    assert os.stat(scv_home / "agents" / "codex").st_mode & 0o777 == 0o700


def test_a_conversation_keeps_its_directory(agents, make_runner, workspace):
    codex = agents("codex")
    codex.replay("codex", "resume_0_first")
    (workspace / "a").mkdir()
    (workspace / "b").mkdir()
    runner = make_runner()
    ok, first = call(runner, {"agent": "codex", "prompt": "hi", "cwd": "a"})
    assert ok and codex.cwd() == str(workspace / "a")
    with pytest.raises(RefusedError) as info:
        runner.prepare("agent", {"session": first["session"], "prompt": "more", "cwd": "b"})
    assert str(info.value).startswith(f"conversation codex-1 runs in {workspace / 'a'}, not {workspace / 'b'}")
    codex.replay("codex", "resume_1_opts_after_resume")
    ok, second = call(runner, {"session": first["session"], "prompt": "more"})
    assert ok and codex.cwd() == str(workspace / "a")        # continued where it started


def test_full_permissions_refused_as_root_is_a_plain_failure(agents, make_runner, write_config):
    write_config('[agents.claude]\npermissions = "full"\n')
    claude = agents("claude")
    claude.replay("claude", "tool_bash_bypass")
    ok, value = call(make_runner(), {"agent": "claude", "prompt": "touch x"})
    assert value["status"] == "failed" and "cannot be used with root/sudo privileges" in value["error"]
    assert "fallback" not in value
    assert value["hint"].startswith("claude refuses its full-permission switch when it runs as root")
    assert 'permissions = "default"' in value["hint"]
    assert claude.calls()[0][1:3] == ["--permission-mode", "bypassPermissions"]


def test_an_agent_gone_since_the_session_started_gets_a_fallback(agents, make_runner):
    claude = agents("claude")
    agents("codex")
    runner = make_runner()                      # both offered at session start
    claude.executable.unlink()
    ok, value = call(runner, {"agent": "claude", "prompt": "hi"})
    assert value["status"] == "failed" and "is no longer an executable file" in value["error"]
    assert "Other agents are available: codex." in value["fallback"]
    assert "session" not in value


def test_handles_and_markers_end_with_the_session(agents, workspace, scv_home, tmp_path):
    """A live conversation's marker exists while the session runs and goes when it closes."""
    from tests.conftest import run_scv
    from tests.fakes import events, write_script
    agents("codex").replay("codex", "resume_0_first")
    markers = scv_home / "state" / "conversations"
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "a", "tool": "agent", "args": {"agent": "codex", "prompt": "hi"}}]},
                          {"calls": [{"id": "l", "tool": "bash", "args": {"command": f"ls {markers}"}}]},
                          {"text": "done"})
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc.stdout)
    done = {e["tool"]: e["result"] for e in seen if e["type"] == "tool.completed"}
    assert done["agent"]["session"] == "codex-1"
    assert "01a23691-2d39-76f3-96e6-26722adb2aab" in done["bash"]["output"]
    assert markers.is_dir() and not list(markers.iterdir())


def test_a_held_back_progress_line_goes_out_while_the_cli_is_quiet(agents, make_runner, tmp_path):
    """Two commands start within half a second: the second line waits for the interval, and is
    forwarded then, while the CLI prints nothing more (it waits to see that line arrive)."""
    import json
    import shlex
    flag = tmp_path / "second-seen"

    def started(command: str) -> str:
        return shlex.quote(json.dumps({"type": "item.started", "item": {"type": "command_execution",
                                                                        "command": command}}))
    reply = shlex.quote('{"type":"item.completed","item":{"type":"agent_message","text":"%s"}}\n')
    agents("codex").write(
        f"printf '%s\\n' {started('make first')} {started('make second')}\n"
        f"for i in $(seq 1 400); do [ -e {flag} ] && break; sleep 0.05; done\n"
        f"if [ -e {flag} ]; then r=seen; else r=never; fi\n"
        f"printf {reply} \"$r\"\n"
        "echo '{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}'\n")
    lines = []

    def on_progress(line: str) -> None:
        lines.append(line)
        if line == "$ make second":
            flag.touch()
    ok, value = call(make_runner(), {"agent": "codex", "prompt": "build"}, on_progress=on_progress)
    assert ok and value["reply"] == "seen", value
    assert lines == ["$ make first", "$ make second"]


def test_a_run_that_raises_does_not_leave_its_conversation_busy(agents, make_runner):
    claude = agents("claude")
    claude.replay("claude", "resume_turn1")
    runner = make_runner()
    ok, first = call(runner, {"agent": "claude", "prompt": "say hi"})
    assert ok and first["session"] == "claude-1"
    claude.replay("claude", "tool_bash_default_perms")

    def broken_client(line: str) -> None:
        raise ConnectionResetError("the client went away")
    with pytest.raises(ConnectionResetError):
        call(runner, {"session": "claude-1", "prompt": "run echo"}, on_progress=broken_client)
    claude.replay("claude", "resume_turn2")
    ok, again = call(runner, {"session": "claude-1", "prompt": "and again"})
    assert ok and again["session"] == "claude-1", again


def test_an_executable_that_cannot_start_or_exits_127_gets_a_fallback(agents, make_runner, tmp_path, scv_home):
    agents("codex")
    bad = tmp_path / "user" / ".local" / "bin" / "claude"
    bad.write_text("#!/no/such/interpreter\n")
    bad.chmod(0o755)
    runner = make_runner()
    ok, value = call(runner, {"agent": "claude", "prompt": "hi"})
    assert not ok and value["status"] == "failed" and "could not be started" in value["error"], value
    assert "Other agents are available: codex." in value["fallback"] and "session" not in value
    (scv_home / "agents/grok/.grok").mkdir(parents=True)
    (scv_home / "agents/grok/.grok/auth.json").write_text('{"token": "x"}')
    agents("grok").write("echo 'grok: error while loading shared libraries: libfoo.so' >&2\nexit 127\n")
    ok, value = call(make_runner(), {"agent": "grok", "prompt": "hi"})
    assert value["status"] == "failed" and value["exit_code"] == 127 and "libfoo" in value["error"]
    assert "fallback" in value
    agents("grok").write("echo '3 tests failed'\nexit 1\n")
    ok, value = call(make_runner(), {"agent": "grok", "prompt": "hi"})
    assert value["status"] == "failed" and value["error"] == "3 tests failed" and "fallback" not in value
