"""`scv exec` using MCP servers as tools, through real processes: an MCP server written with the
official SDK (tests/mcp_tool_server.py) and the fake model server, or the script provider."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import run_scv, scv_env
from tests.fake_openai import FakeOpenAI, Reply
from tests.fakes import events, scv_process, wait_for, write_script
from tests.sandbox_fakes import needs_landlock

SERVER = Path(__file__).resolve().parent / "mcp_tool_server.py"


@pytest.fixture
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def marks(tmp_path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


def entry(marks: Path, *extra: str, **keys) -> dict:
    return {"command": sys.executable, "args": [str(SERVER), "--mark", str(marks), *extra], **keys}


def mcp_file(tmp_path: Path, **servers) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def exec_(workspace, *args, **env):
    return run_scv("exec", *args, "-C", str(workspace), env=scv_env(FAKE_OPENAI_KEY="sk-test", **env), timeout=90)


def offered(request) -> dict[str, dict]:
    return {t["name"]: t for t in request.body["tools"]}


def outputs(request) -> dict[str, dict]:
    return {i["call_id"]: json.loads(i["output"]) for i in request.body["input"] if i.get("type") == "function_call_output"}


def no_process_of(marks_pid: int) -> bool:
    try:
        return psutil.Process(marks_pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_the_model_sees_and_calls_mcp_tools(scv_home, fake, workspace, tmp_path, marks):
    (scv_home / "config.toml").write_text(fake.config())
    config = mcp_file(tmp_path, tools=entry(marks))
    fake.enqueue(Reply(calls=[("c1", "mcp__tools__echo", '{"text": "hi"}'),
                              ("c2", "mcp__tools__fail", '{"reason": "the disk is full"}'),
                              ("c3", "mcp__tools__echo", '{"txt": "typo"}'),
                              ("c4", "mcp__tools__big", '{"size": 200000}')]),
                 Reply(text="all done"))
    proc = exec_(workspace, "use the tools", "--json", "--auto-approve", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    first, second = fake.requests
    tools = offered(first)
    echo = tools["mcp__tools__echo"]
    assert echo["parameters"]["properties"]["text"]["type"] == "string"
    assert echo["parameters"]["required"] == ["text"] and echo["parameters"]["additionalProperties"] is False
    assert "Return the text unchanged." in echo["description"]
    assert {"read", "mcp__tools__slow", "mcp__tools__crash"} <= set(tools)
    seen = {e["call_id"]: e for e in events(proc) if e["type"] == "tool.started"}
    assert seen["c1"]["risk"] == "read_only" and seen["c2"]["risk"] == "network"
    results = outputs(second)
    assert results["c1"]["content"] == [{"type": "text", "text": "echo: hi"}]
    assert not results["c2"]["ok"] and "it failed because the disk is full" in results["c2"]["error"]
    assert not results["c3"]["ok"] and "no argument 'txt'" in results["c3"]["error"]
    assert (marks / "echo").read_text() == "hi\n"       # the refused call never reached the server
    big = results["c4"]
    assert big["truncated"] is True and len(big["content"][0]["text"]) == 65536


def test_progress_and_a_cancel_that_reaches_the_server(scv_home, workspace, tmp_path, marks):
    config = mcp_file(tmp_path, tools=entry(marks))
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"id": "s", "tool": "mcp__tools__slow", "args": {"steps": 2}}]},
                          {"text": "never"})
    proc = exec_(workspace, "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config),
                 "--timeout", "8")
    assert proc.returncode == 124, proc.stderr
    seen = events(proc)
    assert any(e["type"] == "tool.progress" and e["line"].startswith("step ") for e in seen)
    done = next(e for e in seen if e["type"] == "tool.completed")
    assert done["result"]["status"] == "cancelled" and "notifications/cancelled was sent" in done["result"]["error"]
    # The server heard the cancel (the SDK cancelled the tool), and nothing of it is left.
    assert (marks / "cancelled").read_text() == "yes\n"
    assert no_process_of(int((marks / "started").read_text()))


def test_a_crash_fails_the_call_then_one_restart_then_out(scv_home, workspace, tmp_path, marks):
    config = mcp_file(tmp_path, tools=entry(marks))
    crash = {"tool": "mcp__tools__crash", "args": {}}
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "c1", **crash}, {"id": "e1", "tool": "mcp__tools__echo", "args": {"text": "a"}},
                                     {"id": "c2", **crash}]},
                          {"calls": [{"id": "e2", "tool": "mcp__tools__echo", "args": {"text": "b"}}]},
                          {"text": "done"})
    proc = exec_(workspace, "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    done = {e["call_id"]: e["result"] for e in seen if e["type"] == "tool.completed"}
    assert "exited with status 3 during the call of crash" in done["c1"]["error"]
    assert "about to crash on purpose" in done["c1"]["error"] and "about to crash" in done["c1"]["stderr_tail"]
    assert done["e1"]["content"] == [{"type": "text", "text": "echo: a"}]      # restarted for this call
    failed = [e for e in seen if e["type"] == "mcp.failed"]
    assert len(failed) == 1 and failed[0]["server"] == "tools" and "crashed again" in failed[0]["error"]
    assert "unknown tool 'mcp__tools__echo'" in done["e2"]["error"]            # its tools left the offer
    assert "left out of this session" in proc.stderr
    assert len((marks / "crashed").read_text().split()) == 2


def test_a_required_server_that_fails_ends_the_run_before_the_model(scv_home, fake, workspace, tmp_path, marks):
    (scv_home / "config.toml").write_text(fake.config())
    config = mcp_file(tmp_path, db=entry(marks, "--crash-at-start", required=True))
    proc = exec_(workspace, "go", "--mcp-config", str(config))
    assert proc.returncode == 2
    assert "the required MCP server db did not start" in proc.stderr
    assert "cannot reach the database at db.invalid" in proc.stderr
    assert fake.requests == []


def test_an_optional_server_that_fails_is_left_out_with_an_event(scv_home, fake, workspace, tmp_path, marks):
    (scv_home / "config.toml").write_text(fake.config())
    config = mcp_file(tmp_path, db=entry(marks, "--crash-at-start"), tools=entry(marks))
    fake.enqueue(Reply(text="fine"))
    proc = exec_(workspace, "go", "--json", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    failed = [e for e in events(proc) if e["type"] == "mcp.failed"]
    assert [e["server"] for e in failed] == ["db"]
    assert "cannot reach the database" in failed[0]["stderr_tail"]
    tools = offered(fake.requests[0])
    assert "mcp__tools__echo" in tools and not any(name.startswith("mcp__db__") for name in tools)
    assert "MCP server db is left out" in proc.stderr


def test_a_server_slower_than_its_startup_timeout(scv_home, workspace, tmp_path, marks):
    config = mcp_file(tmp_path, slow=entry(marks, "--slow-start", "30", startup_timeout_seconds=1, required=True))
    script = write_script(tmp_path / "s.jsonl", {"text": "never"})
    proc = exec_(workspace, "--script", str(script), "--mcp-config", str(config))
    assert proc.returncode == 2
    assert "did not finish starting (initialize and tools/list) within its startup timeout" in proc.stderr


def test_the_list_changes_between_requests(scv_home, fake, workspace, tmp_path, marks):
    (scv_home / "config.toml").write_text(fake.config())
    fake.enqueue(Reply(calls=[("g", "mcp__tools__grow", "{}")]), Reply(calls=[("x", "mcp__tools__extra", "{}")]),
                 Reply(text="done"))
    proc = exec_(workspace, "grow", "--auto-approve", "--mcp-config", str(mcp_file(tmp_path, tools=entry(marks))))
    assert proc.returncode == 0, proc.stderr
    first, second, third = fake.requests
    assert "mcp__tools__extra" not in offered(first) and "mcp__tools__extra" in offered(second)
    assert outputs(third)["x"]["content"] == [{"type": "text", "text": "extra here"}]


def test_the_environment_is_scrubbed_and_env_passes_what_it_names(scv_home, workspace, tmp_path, marks):
    # The allow-list offers only `environment`; `risk` makes it read_only, so it runs unasked.
    (scv_home / "config.toml").write_text(
        f'[mcp_servers.tools]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        'env = { GITHUB_TOKEN = "$MY_GH", PLAIN = "as is" }\ntools = ["environment"]\nrisk = "read_only"\n')
    calls = [{"id": name, "tool": "mcp__tools__environment", "args": {"name": name}}
             for name in ("GITHUB_TOKEN", "PLAIN", "OPENAI_API_KEY", "OTHER_API_KEY", "PATH")]
    calls.append({"id": "echo", "tool": "mcp__tools__echo", "args": {"text": "x"}})
    script = write_script(tmp_path / "s.jsonl", {"calls": calls}, {"text": "done"})
    proc = exec_(workspace, "--script", str(script), "--json", MY_GH="ghp_secret",
                 OPENAI_API_KEY="sk-x", OTHER_API_KEY="k")
    assert proc.returncode == 0, proc.stderr
    results = {e["call_id"]: e["result"] for e in events(proc) if e["type"] == "tool.completed"}
    assert "unknown tool 'mcp__tools__echo'" in results.pop("echo")["error"]
    done = {call_id: result["content"][0]["text"] for call_id, result in results.items()}
    assert done["GITHUB_TOKEN"] == "ghp_secret" and done["PLAIN"] == "as is"
    assert done["OPENAI_API_KEY"] == "<unset>" and done["OTHER_API_KEY"] == "<unset>"
    assert done["PATH"] == os.environ["PATH"]


@pytest.mark.parametrize("table, expected", [
    ('[mcp_servers.gh]\nargs = ["x"]\n', "mcp_servers.gh.command is missing"),
    ('[mcp_servers.gh]\ncommand = "no-such-mcp-server-here"\n', "mcp_servers.gh.command 'no-such-mcp-server-here' is not on PATH"),
    ('[mcp_servers.gh]\ncommand = "bin/server"\n', "mcp_servers.gh.command 'bin/server' is a relative path"),
    ('[mcp_servers.gh]\ncommand = "/bin/cat"\ncolour = "red"\n', "unknown key mcp_servers.gh.colour"),
    ('[mcp_servers.Bad__Name]\ncommand = "/bin/cat"\n', "mcp_servers.Bad__Name is not a valid server name"),
    ('[mcp_servers.gh]\ncommand = "/bin/cat"\nenv = { T = "${SCV_TEST_UNSET_VAR}" }\n',
     "mcp_servers.gh.env.T takes $SCV_TEST_UNSET_VAR, which is not set"),
    ('[mcp_servers.gh]\ncommand = "/bin/cat"\nrisk = "harmless"\n', "mcp_servers.gh.risk"),
])
def test_bad_configuration_is_named_and_nothing_runs(scv_home, workspace, tmp_path, table, expected):
    (scv_home / "config.toml").write_text(table)
    script = write_script(tmp_path / "s.jsonl", {"text": "never"})
    proc = exec_(workspace, "--script", str(script))
    assert proc.returncode == 2 and expected in proc.stderr, proc.stderr


def test_bad_mcp_config_files(scv_home, workspace, tmp_path):
    script = write_script(tmp_path / "s.jsonl", {"text": "never"})
    cases = [("missing.json", None, "does not exist"),
             ("garbage.json", "{not json", "is not valid JSON"),
             ("shape.json", '{"servers": {}}', 'has no "mcpServers" object'),
             ("http.json", '{"mcpServers": {"web": {"type": "http", "url": "https://example.invalid/mcp"}}}',
              "mcp_servers.web.url: SCV starts MCP servers over stdio only")]
    for name, text, expected in cases:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        proc = exec_(workspace, "--script", str(script), "--mcp-config", str(path))
        assert proc.returncode == 2 and expected in proc.stderr, (name, proc.stderr)


def test_a_project_file_cannot_add_servers(scv_home, workspace, tmp_path):
    (workspace / ".scv").mkdir()
    (workspace / ".scv" / "config.toml").write_text('[mcp_servers.evil]\ncommand = "/bin/sh"\n')
    script = write_script(tmp_path / "s.jsonl", {"text": "never"})
    proc = exec_(workspace, "--script", str(script))
    assert proc.returncode == 2
    assert ".scv/config.toml: mcp_servers.evil may not be set by a project config" in proc.stderr


def test_a_rude_server_fails_its_calls_and_nothing_hangs(scv_home, workspace, tmp_path):
    rude = Path(__file__).resolve().parent / "mcp_rude_server.py"
    config = mcp_file(tmp_path, rude={"command": sys.executable, "args": [str(rude)]})
    calls = [{"id": tool, "tool": f"mcp__rude__{tool}", "args": {}} for tool in ("garbage", "ok", "wrong_id")]
    script = write_script(tmp_path / "s.jsonl", {"calls": calls},
                          {"calls": [{"id": "huge", "tool": "mcp__rude__huge", "args": {}}]},
                          {"calls": [{"id": "after", "tool": "mcp__rude__ok", "args": {}}]}, {"text": "done"})
    proc = exec_(workspace, "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    done = {e["call_id"]: e["result"] for e in seen if e["type"] == "tool.completed"}
    assert "wrote something that is not JSON-RPC during the call of garbage" in done["garbage"]["error"]
    assert done["ok"]["content"] == [{"type": "text", "text": "fine"}]         # restarted for it
    assert "answered a request that was not in flight" in done["wrong_id"]["error"]
    # The second fault left the server out: the huge line never got a chance, nor the call after.
    assert [e["server"] for e in seen if e["type"] == "mcp.failed"] == ["rude"]
    assert "unknown tool 'mcp__rude__huge'" in done["huge"]["error"]
    assert "'bad name!' is left out" in proc.stderr and "'broken' is left out: its input schema is invalid" in proc.stderr


def test_a_line_over_the_limit_fails_the_call(scv_home, workspace, tmp_path):
    rude = Path(__file__).resolve().parent / "mcp_rude_server.py"
    config = mcp_file(tmp_path, rude={"command": sys.executable, "args": [str(rude)]})
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"id": "huge", "tool": "mcp__rude__huge", "args": {}}]},
                          {"calls": [{"id": "after", "tool": "mcp__rude__ok", "args": {}}]}, {"text": "done"})
    proc = exec_(workspace, "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    done = {e["call_id"]: e["result"] for e in events(proc) if e["type"] == "tool.completed"}
    assert "wrote a line over 16 MiB during the call of huge" in done["huge"]["error"]
    assert done["after"]["content"] == [{"type": "text", "text": "fine"}]


def test_a_call_past_its_timeout_is_cancelled_in_the_server_and_images_are_summarised(scv_home, workspace,
                                                                                        tmp_path, marks):
    (scv_home / "config.toml").write_text("[tools]\ncommand_timeout_seconds = 2\n")
    config = mcp_file(tmp_path, tools=entry(marks))
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "s", "tool": "mcp__tools__slow", "args": {"steps": 1}},
                                     {"id": "p", "tool": "mcp__tools__picture", "args": {}}]}, {"text": "done"})
    proc = exec_(workspace, "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    done = {e["call_id"]: e["result"] for e in events(proc) if e["type"] == "tool.completed"}
    assert done["s"]["status"] == "timeout" and "ran past its timeout" in done["s"]["error"]
    assert (marks / "cancelled").read_text() == "yes\n"
    assert done["p"].get("content"), done["p"]
    image, text = done["p"]["content"]
    assert image["type"] == "image" and image["mimeType"] == "image/png" and "not shown" in image["note"]
    assert "data" not in image and text == {"type": "text", "text": "a picture"}


def test_a_server_is_recorded_and_a_killed_scv_leaves_no_orphan(scv_home, workspace, tmp_path, marks):
    config = mcp_file(tmp_path, tools=entry(marks))
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"id": "s", "tool": "mcp__tools__slow", "args": {"steps": 1}}]},
                          {"text": "never"})
    with scv_process("exec", "--script", str(script), "--auto-approve", "--mcp-config", str(config),
                     "-C", str(workspace)) as proc:
        started = wait_for(lambda: (marks / "started").exists() and (marks / "started").read_text().strip(),
                           what="the slow tool to start")
        pid = int(started)
        listed = json.loads(run_scv("agents", "ps", "--json").stdout)["delegations"]
        (row,) = [r for r in listed if r["agent"] == "mcp:tools"]
        assert row["pid"] == pid and row["state"] == "running"
        proc.kill()
        proc.wait()
    # The next SCV process reconciles what the killed one left: the server is stopped.
    after = write_script(tmp_path / "t.jsonl", {"text": "fine"})
    assert exec_(workspace, "--script", str(after)).returncode == 0
    wait_for(lambda: no_process_of(pid), what="the killed run's MCP server to be stopped")
    assert not [r for r in json.loads(run_scv("agents", "ps", "--all", "--json").stdout)["delegations"]
                if r["agent"] == "mcp:tools"]


def test_scv_server_stdio_sessions_use_the_users_servers(scv_home, clients, workspace, tmp_path, marks):
    (scv_home / "config.toml").write_text(
        f'[mcp_servers.tools]\ncommand = "{sys.executable}"\nargs = ["{SERVER}", "--mark", "{marks}"]\n')
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "e", "tool": "mcp__tools__echo", "args": {"text": "stdio"}}]},
                          {"text": "said {{e.content}}"})
    client = clients("--script", str(script))
    session = client.start(cwd=str(workspace))
    assert "mcp__tools__echo" in session["tools"]
    client.request("turn.start", {"prompt": "echo"})
    assert "echo: stdio" in client.until("turn.completed").params["reply"]
    client.request("session.close")
    client.close_stdin()
    assert client.wait() == 0
    assert (marks / "echo").read_text() == "stdio\n"


def test_scv_server_stdio_reports_a_required_server_that_fails(scv_home, clients, workspace, tmp_path, marks):
    (scv_home / "config.toml").write_text(
        f'[mcp_servers.db]\ncommand = "{sys.executable}"\nargs = ["{SERVER}", "--crash-at-start"]\nrequired = true\n')
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", {"text": "x"})))
    client.request("initialize", {"protocol_version": 3})
    failed = client.response(client.send("session.start", {"cwd": str(workspace)}))
    assert failed.error.code == -32000 and "the required MCP server db did not start" in failed.error.message
    assert "cannot reach the database" in failed.error.message


@needs_landlock
def test_a_server_runs_inside_the_configured_sandbox(scv_home, workspace, tmp_path):
    (scv_home / "config.toml").write_text('[tools]\nsandbox = "workspace-write"\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    config = mcp_file(tmp_path, tools={"command": sys.executable, "args": [str(SERVER)]})
    calls = [{"id": "in", "tool": "mcp__tools__touch", "args": {"path": str(workspace / "inside.txt")}},
             {"id": "out", "tool": "mcp__tools__touch", "args": {"path": str(outside / "escape.txt")}}]
    script = write_script(tmp_path / "s.jsonl", {"calls": calls}, {"text": "done"})
    proc = exec_(workspace, "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config))
    assert proc.returncode == 0, proc.stderr
    done = {e["call_id"]: e["result"]["content"][0]["text"] for e in events(proc) if e["type"] == "tool.completed"}
    assert done["in"] == "written" and (workspace / "inside.txt").read_text() == "touched\n"
    assert done["out"].startswith("refused") and not (outside / "escape.txt").exists()
