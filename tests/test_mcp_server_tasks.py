"""`scv mcp` tasks (revision 2025-11-25) from a host that speaks the wire itself (the SDK client
cannot poll a task while its elicitation callback holds the read loop): a task reads
`input_required` while its approval question waits, and a finished task is forgotten after its
`ttl`, result and all."""

import json
import os
import select
import subprocess
import sys
import time

import pytest

from tests.agent_fakes import on_cli
from tests.conftest import ROOT, scv_env
from tests.agent_fakes import install


class RawHost:
    """`scv mcp` on pipes: JSON-RPC lines in, JSON-RPC lines out, read with a deadline."""

    def __init__(self, workspace, env, *flags: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "scv", "mcp", "-C", str(workspace), *flags],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=str(ROOT))
        self.buffer = b""
        self.answers: dict = {}
        self.asked: list[dict] = []
        self.ids = iter(range(1, 1000))

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> int:
        request_id = next(self.ids)
        self.send({"id": request_id, "method": method, "params": params})
        return request_id

    def next(self, timeout: float = 90) -> dict:
        """The next message (a bound for a loaded machine, never a measurement)."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, left))
            if not ready:
                self.proc.kill()
                raise AssertionError(f"scv mcp said nothing within {timeout} s; its stderr: "
                                     f"{self.proc.stderr.read().decode(errors='replace')[-2000:]}")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, "scv mcp closed its stdout"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def answer(self, request_id: int) -> dict:
        """The answer to `request_id`; answers to others that come first are kept for later."""
        while request_id not in self.answers:
            message = self.next()
            if "method" not in message:
                self.answers[message.get("id")] = message
            else:
                self.asked.append(message)
        return self.answers.pop(request_id)

    def question(self) -> dict:
        """The next request or notification from scv mcp."""
        while not self.asked:
            message = self.next()
            if "method" in message:
                return message
            self.answers[message.get("id")] = message
        return self.asked.pop(0)

    def call(self, method: str, params: dict) -> dict:
        return self.answer(self.request(method, params))

    def close(self) -> int:
        self.proc.stdin.close()
        code = self.proc.wait(60)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code


@pytest.fixture
def raw_host(tmp_path, scv_home):
    user_home = tmp_path / "user"
    (scv_home / "config.toml").write_text(on_cli())
    # The fake codex answers once the test opens the gate (a file), so a task's end is the test's to choose.
    gate = tmp_path / "gate"
    install(user_home / ".local" / "bin", "codex", tmp_path / "log" / "codex").replay(
        "codex", "text", before=f"while [ ! -e {gate} ]; do sleep 0.02; done\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = scv_env(HOME=str(user_home), PATH="/usr/bin:/bin", SCV_HOME=str(scv_home))
    started = []

    def start(*flags: str, elicitation: bool) -> RawHost:
        host = RawHost(workspace, env, *flags)
        started.append(host)
        capabilities = {"elicitation": {}} if elicitation else {}
        init = host.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                        "clientInfo": {"name": "raw", "version": "1"}})
        assert init["result"]["protocolVersion"] == "2025-11-25"
        host.send({"method": "notifications/initialized", "params": {}})
        return host
    start.gate = gate
    yield start
    for host in started:
        if host.proc.poll() is None:
            host.proc.kill()
            host.proc.wait()


def test_a_task_reads_input_required_while_its_question_waits(raw_host):
    raw_host.gate.touch()
    host = raw_host(elicitation=True)
    created = host.call("tools/call", {"name": "agent", "arguments": {"agent": "codex", "prompt": "hi"},
                                       "task": {"ttl": 600000}})
    task_id = created["result"]["task"]["taskId"]
    question = host.question()
    assert question["method"] == "elicitation/create" and "agent" in question["params"]["message"]
    assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    waiting = host.call("tasks/get", {"taskId": task_id})["result"]
    assert waiting["status"] == "input_required"
    listed = host.call("tasks/list", {})["result"]["tasks"]
    assert [(t["taskId"], t["status"]) for t in listed] == [(task_id, "input_required")]
    host.send({"id": question["id"], "result": {"action": "accept"}})
    result = host.call("tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is False and result["structuredContent"]["reply"] == "hi from fake"
    assert host.call("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    assert host.close() == 0


def test_a_finished_task_is_forgotten_after_its_ttl(raw_host):
    host = raw_host("--auto-approve", elicitation=False)
    short = host.call("tools/call", {"name": "agent", "arguments": {"agent": "codex", "prompt": "hi"},
                                     "task": {"ttl": 1}})["result"]["task"]
    kept = host.call("tools/call", {"name": "agent", "arguments": {"agent": "codex", "prompt": "hi"},
                                    "task": {}})["result"]["task"]
    assert short["ttl"] == 1 and kept["ttl"] is None
    # A working task is kept past its ttl, and its result given to whoever waits for it...
    waits = [host.request("tasks/result", {"taskId": task["taskId"]}) for task in (short, kept)]
    assert host.call("tasks/get", {"taskId": short["taskId"]})["result"]["status"] == "working"
    raw_host.gate.touch()
    for request_id in waits:
        assert host.answer(request_id)["result"]["structuredContent"]["reply"] == "hi from fake"
    # ... and then the finished task is gone: more than 1 ms has passed since its creation.
    gone = host.call("tasks/get", {"taskId": short["taskId"]})["error"]
    assert gone["code"] == -32602 and "forgotten after its ttl" in gone["message"]
    listed = host.call("tasks/list", {})["result"]["tasks"]
    assert [(t["taskId"], t["status"]) for t in listed] == [(kept["taskId"], "completed")]
    assert host.close() == 0
