"""`scv mcp` driven by the official MCP SDK's client as the host, through real processes, on the
fake agent CLIs: the tools offered, an agent call with its progress, approvals through
elicitation or the flag, the depth limit, garbage on the wire, and --print-config."""

import asyncio
import json
import subprocess
import sys

import pytest

from tests.agent_fakes import install, on_cli
from tests.conftest import ROOT, run_scv, scv_env

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.types import ElicitResult  # noqa: E402


@pytest.fixture
def host(tmp_path, scv_home):
    """host(body, *flags, elicit=None, **env) runs `body(session)` against a fresh `scv mcp`."""
    user_home = tmp_path / "user"
    (scv_home / "config.toml").write_text(on_cli())
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def run(body, *flags: str, elicit=None, **extra):
        env = scv_env(HOME=str(user_home), PATH="/usr/bin:/bin", SCV_HOME=str(scv_home), **extra)
        params = StdioServerParameters(command=sys.executable, args=["-m", "scv", "mcp", "-C", str(workspace), *flags],
                                       env=env, cwd=str(ROOT))

        async def main():
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicit) as session:
                    await session.initialize()
                    return await body(session)
        return asyncio.run(asyncio.wait_for(main(), 180))
    run.fake = lambda name: install(user_home / ".local" / "bin", name, tmp_path / "log" / name)
    run.workspace = workspace
    return run


def test_agent_call_with_progress_through_the_sdk_client(host):
    host.fake("codex").replay("codex", "text")
    claude = host.fake("claude")
    claude.replay("claude", "resume_turn1", paced=True)
    progress = []

    async def body(session):
        listed = await session.list_tools()
        names = {tool.name: tool for tool in listed.tools}
        answer = await session.call_tool("agent", {"agent": "codex", "prompt": "hi"})
        followed = await session.call_tool("agent", {"agent": "claude", "prompt": "hi"},
                                           progress_callback=lambda p, total, message: progress.append((p, message)))
        return names, answer, followed

    names, answer, followed = host(body, "--auto-approve")
    assert set(names) == {"agent", "agent_wait", "agent_status", "agent_cancel"}
    assert names["agent_status"].annotations.readOnlyHint is True
    assert names["agent"].annotations.readOnlyHint is False
    assert "codex" in json.dumps(names["agent"].inputSchema)
    assert answer.isError is False and answer.structuredContent["reply"] == "hi from fake"
    assert json.loads(answer.content[0].text) == answer.structuredContent
    assert followed.isError is False and followed.structuredContent["status"] == "completed"
    assert progress and [p for p, _ in progress] == list(range(1, len(progress) + 1))
    assert all(isinstance(message, str) and message for _, message in progress)


@pytest.mark.parametrize("action, ran", [("accept", True), ("decline", False), ("cancel", False)])
def test_a_risky_call_is_put_to_the_host_as_elicitation(host, action, ran):
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action=action)

    async def body(session):
        return await session.call_tool("bash", {"command": "echo made > made.txt"})

    result = host(body, "--tools", "bash", elicit=elicit)
    assert len(asked) == 1 and "bash" in asked[0] and "echo made" in asked[0]
    assert result.isError is (not ran)
    assert (host.workspace / "made.txt").exists() is ran
    if not ran:
        assert result.structuredContent.get("refused") is True


def test_auto_approve_wins_over_a_host_that_declares_elicitation(host):
    """`claude -p` declares elicitation and declines whatever it is asked: the flag means no asking."""
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action="decline")

    async def body(session):
        return await session.call_tool("bash", {"command": "echo made > made.txt"})

    result = host(body, "--tools", "bash", "--auto-approve", elicit=elicit)
    assert result.isError is False and asked == [] and (host.workspace / "made.txt").exists()


@pytest.mark.parametrize("flags, ran", [(("--auto-approve",), True), ((), False)])
def test_without_elicitation_the_flag_decides_at_once(host, flags, ran):
    async def body(session):
        return await session.call_tool("bash", {"command": "echo made > made.txt"})

    result = host(body, "--tools", "bash,read", *flags)
    assert result.isError is (not ran) and (host.workspace / "made.txt").exists() is ran


def test_at_the_depth_limit_no_agent_tool_is_offered(host):
    host.fake("codex").replay("codex", "text")

    async def body(session):
        return [tool.name for tool in (await session.list_tools()).tools]

    assert host(body, "--tools", "read", SCV_DELEGATION_DEPTH="2") == ["read"]
    assert "agent" in host(body, "--tools", "read")


def test_garbage_unknown_methods_and_unknown_tools_get_json_rpc_errors(tmp_path, scv_home):
    lines = ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01",'
             '"capabilities":{}}}', "not json", '{"jsonrpc":"2.0","id":2,"method":"nope"}',
             '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}',
             '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":7}']
    proc = subprocess.run([sys.executable, "-m", "scv", "mcp", "-C", str(tmp_path)], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=120, env=scv_env(SCV_HOME=str(scv_home)))
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    by_id = {m.get("id"): m for m in got}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[3]["error"]["code"] == -32602 and "unknown tool 'nope'" in by_id[3]["error"]["message"]
    assert by_id[4]["error"]["code"] == -32602


def test_print_config_for_each_host():
    claude = json.loads(run_scv("mcp", "--print-config", "claude").stdout)
    assert claude["mcpServers"]["scv"]["args"] == ["mcp"]
    command = claude["mcpServers"]["scv"]["command"]
    assert command.startswith("/") and subprocess.run([command, "mcp", "--print-config", "gemini"], capture_output=True,
                                                      text=True, timeout=120).stdout.strip() == json.dumps(
        claude, indent=2)
    codex = run_scv("mcp", "--print-config", "codex").stdout
    assert codex.startswith("[mcp_servers.scv]\n") and 'args = ["mcp"]' in codex
    other = run_scv("mcp", "--print-config", "cursor")
    assert other.returncode == 2 and "claude, codex or gemini" in other.stderr


def test_a_cancelled_call_stops_its_processes_and_gets_no_answer(host, tmp_path):
    from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification
    from mcp.types import CancelledNotificationParams, ClientNotification, ClientRequest
    from tests.delegation_fakes import gone
    pid_file = tmp_path / "grandchild.pid"
    host.fake("codex").write(f"(setsid sleep 300 & echo $! > {pid_file}.tmp; mv {pid_file}.tmp {pid_file})\n"
                             "sleep 300\n")

    async def body(session):
        request = ClientRequest(CallToolRequest(params=CallToolRequestParams(name="agent", arguments={
            "agent": "codex", "prompt": "hi"})))
        call = asyncio.ensure_future(session.send_request(request, CallToolResult))
        while not pid_file.exists():
            assert not call.done(), call.result()
            await asyncio.sleep(0.05)
        pid = int(pid_file.read_text())
        # The SDK numbers its requests from 0 (initialize), so the call is request 1.
        await session.send_notification(ClientNotification(CancelledNotification(
            params=CancelledNotificationParams(requestId=1, reason="the user changed their mind"))))
        while not gone([pid]):
            await asyncio.sleep(0.05)
        # The server still answers other requests, and never the cancelled one.
        listed = await session.list_tools()
        answered = call.done()
        call.cancel()
        return listed, answered

    listed, answered = host(body, "--auto-approve")
    assert listed.tools and answered is False


def test_a_killed_host_leaves_orphans_the_next_scv_mcp_stops(tmp_path, monkeypatch, workspace, scv_home):
    from tests.delegation_fakes import fake_agent, kill_scv_tree, records_in, tagged_with
    from tests.fakes import setup_fake_home, wait_for
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "setsid sleep 300 &\nsleep 300 &\nwait\n")
    proc = subprocess.Popen([sys.executable, "-m", "scv", "mcp", "--auto-approve", "-C", str(workspace)],
                            env=scv_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    handle = None
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                         b'"capabilities":{}}}\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
                         b'"agent","arguments":{"agent":"codex","prompt":"work"}}}\n')
        proc.stdin.flush()
        record = wait_for(lambda: records_in(scv_home))[0]
        handle = record["handle"]
        wait_for(lambda: len(tagged_with(handle)) >= 3)
        kill_scv_tree(proc.pid, handle)     # the host's SIGKILL took every SCV process with it
        proc.wait(10)
        assert tagged_with(handle), "the agent outlives the SCV processes"
        after = subprocess.run([sys.executable, "-m", "scv", "mcp", "-C", str(workspace)], env=scv_env(),
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert after.returncode == 0, after.stderr
        assert f"stopped 1 orphaned delegation(s): {handle}" in after.stderr
        wait_for(lambda: tagged_with(handle) == [])
        assert records_in(scv_home) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for leftover in tagged_with(handle) if handle else []:
            leftover.kill()         # only this test's own processes


def test_agent_as_a_task_polled_listed_and_cancelled(host, tmp_path):
    from mcp.types import CallToolResult
    from tests.delegation_fakes import gone
    host.fake("codex").replay("codex", "text")
    pid_file = tmp_path / "sleeper.pid"
    host.fake("claude").write(f"(setsid sleep 300 & echo $! > {pid_file}.tmp; mv {pid_file}.tmp {pid_file})\n"
                              "sleep 300\n")

    async def body(session):
        tasks = session.experimental
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        created = await tasks.call_tool_as_task("agent", {"agent": "codex", "prompt": "hi"})
        result = await tasks.get_task_result(created.task.taskId, CallToolResult)
        finished = await tasks.get_task(created.task.taskId)
        slow = await tasks.call_tool_as_task("agent", {"agent": "claude", "prompt": "hi"})
        while not pid_file.exists():
            await asyncio.sleep(0.05)
        cancelled = await tasks.cancel_task(slow.task.taskId)
        pid = int(pid_file.read_text())
        while not gone([pid]):
            await asyncio.sleep(0.05)
        every = await tasks.list_tasks()
        return listed, created, result, finished, cancelled, every

    listed, created, result, finished, cancelled, every = host(body, "--auto-approve")
    assert listed["agent"].execution.taskSupport == "optional" and listed["agent_status"].execution is None
    assert created.task.status == "working"
    assert result.isError is False and result.structuredContent["reply"] == "hi from fake"
    assert finished.status == "completed"
    assert cancelled.status == "cancelled"
    assert {task.taskId: task.status for task in every.tasks} == {created.task.taskId: "completed",
                                                                  cancelled.taskId: "cancelled"}


@pytest.mark.parametrize("approved", [True, False])
def test_a_relayed_acp_permission_request_is_put_to_the_host(host, tmp_path, approved):
    from tests.live_fakes import install_peer
    server = install_peer(tmp_path / "user", tmp_path / "peer-log", "claude-agent-acp")
    target = host.workspace / "made.txt"
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        # The call itself (delegate risk) is approved; the relayed request gets the test's answer.
        return ElicitResult(action="accept" if len(asked) == 1 or approved else "decline")

    async def body(session):
        return await session.call_tool("agent", {"agent": "claude", "prompt": f"permission edit {target}"})

    result = host(body, elicit=elicit)
    assert len(asked) == 2 and "agent" in asked[0] and "[claude-1 acp] edit made.txt (edit)" in asked[1]
    [answer] = server.events("permission")
    assert result.isError is False
    if approved:
        assert answer["option"] == "allow" and target.read_text() == "written by the peer\n"
    else:
        assert answer["option"] == "reject" and not target.exists()
