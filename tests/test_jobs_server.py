"""Background jobs through `scv server --stdio` (a real server process): the server starts a
report turn on its own once idle, with `origin` on its events, and closing the session stops the
processes of jobs still running."""

import json
import queue
import subprocess
import sys
import threading

from tests.conftest import scv_env
from tests.delegation_fakes import codex_reply_lines, fake_agent, gone
from tests.fakes import setup_fake_home, wait_for, write_script


class Client:
    """Just enough JSON-RPC for these tests: requests out, every message in, in order."""

    def __init__(self, script, workspace):
        self.proc = subprocess.Popen([sys.executable, "-m", "scv", "server", "--stdio", "--script", str(script)],
                                     cwd=workspace, env=scv_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.inbox: "queue.Queue[dict]" = queue.Queue()
        self.ids = iter(range(1, 10_000))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))

    def send(self, method: str, params: dict) -> int:
        request_id = next(self.ids)
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        return request_id

    def until(self, accept, timeout: float = 30) -> dict:
        while True:
            message = self.inbox.get(timeout=timeout)
            if accept(message):
                return message

    def notification(self, method: str, timeout: float = 30, **match) -> dict:
        return self.until(lambda m: m.get("method") == method and all(m["params"].get(k) == v
                                                                      for k, v in match.items()), timeout)["params"]

    def call(self, method: str, params: dict) -> dict:
        request_id = self.send(method, params)
        reply = self.until(lambda m: m.get("id") == request_id and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def open_session(self, workspace) -> None:
        self.call("initialize", {"protocol_version": 3})
        self.call("session.start", {"cwd": str(workspace), "auto_approve": True})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


BACKGROUND = {"calls": [{"id": "b", "tool": "agent", "args": {"agent": "codex", "prompt": "work", "background": True}}]}


def test_the_server_reports_a_finished_job_in_a_turn_of_its_own(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "sleep 0.3\n" + codex_reply_lines("from the job"))
    script = write_script(tmp_path / "s.jsonl", BACKGROUND, {"text": "started {{b.job}}"}, {"text": "relayed"})
    client = Client(script, workspace)
    try:
        client.open_session(workspace)
        client.call("turn.start", {"prompt": "go"})
        assert client.notification("turn.completed", turn_id="turn-1")["reply"] == "started job-1"
        report = client.notification("turn.started")
        assert report["prompt"].startswith("[SCV background report]") and "from the job" in report["prompt"]
        assert report["origin"]["kind"] == "background"
        assert report["origin"]["jobs"] == [{"job": "job-1", "agent": "codex", "status": "completed"}]
        done = client.notification("turn.completed", turn_id=report["turn_id"])
        assert done["reply"] == "relayed" and done["origin"] == report["origin"]
    finally:
        client.stop()


def test_closing_the_session_stops_running_jobs(tmp_path, monkeypatch, workspace):
    setup_fake_home(tmp_path, monkeypatch)
    pids = tmp_path / "pids.txt"
    fake_agent(tmp_path, "codex", f"echo $$ >> {pids}\nsetsid sleep 300 &\necho $! >> {pids}\nsleep 300\n")
    script = write_script(tmp_path / "s.jsonl", BACKGROUND, {"text": "started"})
    client = Client(script, workspace)
    try:
        client.open_session(workspace)
        client.call("turn.start", {"prompt": "go"})
        client.notification("turn.completed", turn_id="turn-1")
        wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2)
        started = [int(p) for p in pids.read_text().split()]
        assert not gone(started)
        client.call("session.close", {})
        wait_for(lambda: gone(started))
        assert client.proc.poll() is None       # the server itself carries on
    finally:
        client.stop()


def test_tool_completed_carries_the_jobs_a_call_started_or_showed(tmp_path, monkeypatch, workspace):
    """What a parent following this session as a nested SCV counts its jobs from."""
    setup_fake_home(tmp_path, monkeypatch)
    gate = tmp_path / "finish"
    fake_agent(tmp_path, "codex", f"while [ ! -e {gate} ]; do sleep 0.05; done\n" + codex_reply_lines("job done"))
    script = write_script(tmp_path / "s.jsonl", BACKGROUND,
                          {"calls": [{"id": "s", "tool": "agent_status", "args": {}}]},
                          {"calls": [{"id": "w", "tool": "agent_wait", "args": {"job": "job-1"}}]},
                          {"calls": [{"id": "r", "tool": "read", "args": {"path": "."}}]},
                          {"text": "all seen"})
    client = Client(script, workspace)
    try:
        client.open_session(workspace)
        client.call("turn.start", {"prompt": "go"})
        started = client.notification("tool.completed", call_id="b")
        assert started["jobs"] == [{"job": "job-1", "status": "running"}]
        assert client.notification("tool.completed", call_id="s")["jobs"] == [{"job": "job-1", "status": "running"}]
        gate.touch()
        waited = client.notification("tool.completed", call_id="w")
        assert waited["jobs"] == [{"job": "job-1", "status": "completed"}]
        assert "jobs" not in client.notification("tool.completed", call_id="r")
        assert client.notification("turn.completed", turn_id="turn-1")["reply"] == "all seen"
    finally:
        client.stop()
