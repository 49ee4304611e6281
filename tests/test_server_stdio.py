"""`scv server --stdio` as a real process: the JSON-RPC protocol, turns, approvals over the
protocol (approved, denied, cancelled while waiting), bad messages, and a client that goes away."""

import json
import time
from pathlib import Path

import pytest

from tests.conftest import scv_env
from tests.fake_openai import FakeOpenAI, Reply, Stall
from tests.fakes import assert_gone as _assert_gone, long_script as _long_script, unique_marker as _marker
from tests.fakes import wait_for_sleepers as _wait_for_sleepers, write_script


def test_handshake_turn_and_events(clients, workspace, tmp_path):
    (workspace / "f.txt").write_text("data")
    script = write_script(tmp_path / "s.jsonl",
                          {"text": "looking", "calls": [{"id": "r", "tool": "read", "args": {"path": "f.txt"}}]},
                          {"text": "it says {{r.content}}"},
                          {"text": "second turn"})
    client = clients("--script", str(script))
    session = client.start(cwd=str(workspace), delegation_depth=0, model=None, auto_approve=False,
                           system_prompt="Be brief.")
    assert session["workspace"] == str(workspace) and session["provider"] == "script"
    assert {"read", "write", "bash"} <= set(session["tools"])
    turn = client.request("turn.start", {"prompt": "read f.txt"})
    done = client.until("turn.completed")
    assert done.params["reply"] == "it says data" and done.params["turn_id"] == turn["turn_id"]
    assert set(done.params["usage"]) == {"turns", "input_tokens", "cached_input_tokens", "output_tokens", "cost_usd",
                                         "cost_source", "total_tokens"}
    assert "origin" not in done.params
    methods = [m.method for m in client.seen if m.method]
    assert methods[0] == "turn.started"
    assert methods.index("tool.started") < methods.index("tool.completed") < methods.index("turn.completed")
    client.request("turn.start", {"prompt": "again"})
    assert client.until("turn.completed").params["reply"] == "second turn"
    client.request("session.close")
    client.close_stdin()
    assert client.wait() == 0


def test_bad_messages_get_errors_and_the_session_continues(clients, workspace, tmp_path):
    script = write_script(tmp_path / "s.jsonl", {"text": "fine"})
    client = clients("--script", str(script))
    early = client.response(client.send("turn.start", {"prompt": "x"}))
    assert early.error.code == -32000 and "initialize first" in early.error.message
    client.start(cwd=str(workspace))
    client.send_raw(b"{not json\n")
    assert client.next().error.code == -32700
    client.send_raw(b'["a"]\n')
    assert client.next().error.code == -32600
    assert client.response(client.send("turn.begin", {})).error.code == -32601
    bad = client.response(client.send("turn.start", {"prompt": "x", "extra": 1}))
    assert bad.error.code == -32602 and "extra" in bad.error.message
    bad = client.response(client.send("approval.resolve", {"id": "approval-99", "approved": True}))
    assert bad.error.code == -32602 and "no approval request" in bad.error.message
    wrong = client.response(client.send("initialize", {"protocol_version": 2}))
    assert wrong.error.code == -32602
    again = client.response(client.send("session.start", {}))
    assert again.error.code == -32000 and "already open" in again.error.message
    client.request("turn.start", {"prompt": "still there?"})
    assert client.until("turn.completed").params["reply"] == "fine"


def test_session_start_errors_are_sentences(clients, workspace, tmp_path):
    client = clients()      # no script and no provider configured
    client.request("initialize", {"protocol_version": 3})
    failed = client.response(client.send("session.start", {"cwd": str(workspace)}))
    assert failed.error.code == -32000 and "no model provider is configured" in failed.error.message
    missing = client.response(client.send("session.start", {"cwd": str(tmp_path / "absent")}))
    assert "does not exist" in missing.error.message


def _approval_script(tmp_path: Path, workspace: Path) -> Path:
    return write_script(tmp_path / "s.jsonl",
                        {"calls": [{"id": "w", "tool": "write",
                                    "args": {"path": "made.txt", "content": "yes", "mode": "create"}}]},
                        {"text": "ok={{w.ok}} {{w.error}}"})


@pytest.mark.parametrize("approved", [True, False])
def test_approval_over_the_protocol(clients, workspace, tmp_path, approved):
    client = clients("--script", str(_approval_script(tmp_path, workspace)))
    client.start(cwd=str(workspace))
    client.request("turn.start", {"prompt": "write it"})
    asked = client.until("approval.requested")
    assert set(asked.params) == {"id", "tool", "risk", "summary", "turn_id", "workspace"}
    assert asked.params["workspace"] == str(workspace)
    assert asked.params["tool"] == "write" and asked.params["risk"] == "filesystem"
    assert "made.txt" in asked.params["summary"]
    client.request("approval.resolve", {"id": asked.params["id"], "approved": approved})
    done = client.until("turn.completed")
    if approved:
        assert done.params["reply"].startswith("ok=true") and (workspace / "made.txt").read_text() == "yes"
    else:
        assert "approval for write was denied" in done.params["reply"] and not (workspace / "made.txt").exists()


def test_auto_approve_client_is_not_asked(clients, workspace, tmp_path):
    client = clients("--script", str(_approval_script(tmp_path, workspace)))
    client.start(cwd=str(workspace), auto_approve=True)
    client.request("turn.start", {"prompt": "write it"})
    assert client.until("turn.completed").params["reply"].startswith("ok=true")
    assert not client.notifications("approval.requested")


def test_turn_cancelled_while_waiting_for_approval_denies_it(clients, workspace, tmp_path):
    client = clients("--script", str(_approval_script(tmp_path, workspace)))
    client.start(cwd=str(workspace))
    client.request("turn.start", {"prompt": "write it"})
    asked = client.until("approval.requested")
    assert client.request("turn.cancel") == {"cancelled": True}
    resolved = client.until("approval.resolved")
    assert resolved.params == {"turn_id": asked.params["turn_id"], "id": asked.params["id"], "approved": False}
    failed = client.until("turn.failed")
    assert failed.params["reason"] == "cancelled"
    completed = client.notifications("tool.completed")[0]
    assert completed["ok"] is False and not (workspace / "made.txt").exists()
    late = client.response(client.send("approval.resolve", {"id": asked.params["id"], "approved": True}))
    assert late.error is not None
    assert client.request("turn.cancel") == {"cancelled": False}


def test_turn_cancel_stops_a_running_command(clients, workspace, tmp_path):
    marker = _marker()
    client = clients("--script", str(_long_script(tmp_path, marker)))
    client.start(cwd=str(workspace), auto_approve=True)
    client.request("turn.start", {"prompt": "run it"})
    _wait_for_sleepers(marker)
    client.request("turn.cancel")
    failed = client.until("turn.failed")
    assert failed.params["reason"] == "cancelled"
    _assert_gone(marker)
    client.request("turn.start", {"prompt": "next"})   # the session goes on after a cancelled turn
    assert client.until("turn.completed").params["reply"].startswith("finished")


def test_client_eof_mid_turn_stops_processes_and_exits(clients, workspace, tmp_path):
    marker = _marker()
    client = clients("--script", str(_long_script(tmp_path, marker)))
    client.start(cwd=str(workspace), auto_approve=True)
    client.request("turn.start", {"prompt": "run it"})
    _wait_for_sleepers(marker)
    client.close_stdin()
    assert client.wait(30) == 0
    _assert_gone(marker)


def test_turn_with_a_model_endpoint(clients, workspace, scv_home):
    fake = FakeOpenAI()
    try:
        (scv_home / "config.toml").write_text(fake.config("chat"))
        (workspace / "x.txt").write_text("ex")
        fake.enqueue(Reply(text="checking", calls=[("c1", "read", '{"path": "x.txt"}')]), Reply(text="it is ex"))
        client = clients(env=scv_env(FAKE_OPENAI_KEY="sk-test"))
        session = client.start(cwd=str(workspace), model="other-model", system_prompt="Client prompt.")
        assert session["provider"] == "fake" and session["model"] == "other-model"
        client.request("turn.start", {"prompt": "what is in x.txt?"})
        done = client.until("turn.completed")
        assert done.params["reply"] == "it is ex"
        assert done.params["usage"]["total_tokens"] == 30
        body = fake.requests[0].body
        assert body["model"] == "other-model"
        assert body["messages"][0]["content"].startswith("Client prompt.")
        deltas = "".join(p["text"] for p in client.notifications("assistant.delta"))
        assert deltas == "checkingit is ex"
        tool_message = next(m for m in fake.requests[1].body["messages"] if m["role"] == "tool")
        assert json.loads(tool_message["content"])["content"] == "ex"
    finally:
        fake.close()


def test_turn_cancel_while_the_model_is_silent(clients, workspace, scv_home):
    fake = FakeOpenAI()
    try:
        (scv_home / "config.toml").write_text(fake.config("responses"))
        fake.enqueue(Stall(120), Reply(text="after the cancel"))
        client = clients(env=scv_env(FAKE_OPENAI_KEY="sk-test"))
        client.start(cwd=str(workspace))
        client.request("turn.start", {"prompt": "think hard"})
        deadline = time.monotonic() + 20
        while not fake.requests:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.request("turn.cancel") == {"cancelled": True}
        # The stream stalls for two minutes: the turn ends only because its connection was shut.
        failed = client.until("turn.failed", timeout=20)
        assert failed.params["reason"] == "cancelled"
        client.request("turn.start", {"prompt": "again"})
        assert client.until("turn.completed").params["reply"] == "after the cancel"
    finally:
        fake.close()


def test_sigterm_mid_turn_stops_processes_and_exits(clients, workspace, tmp_path):
    import signal
    marker = _marker()
    client = clients("--script", str(_long_script(tmp_path, marker)))
    client.start(cwd=str(workspace), auto_approve=True)
    client.request("turn.start", {"prompt": "run it"})
    _wait_for_sleepers(marker)
    client.proc.send_signal(signal.SIGTERM)
    assert client.wait(30) == 0
    _assert_gone(marker)
    assert client.until("turn.failed").params["reason"] == "interrupted"


def test_lines_that_are_no_request_are_answered_in_their_place(clients, workspace, tmp_path):
    """What the server's connection (scv/core/jsonrpc.py, strict) cannot read is answered where it
    stood: a message without "jsonrpc": "2.0" keeps its id, a boolean id is refused, and a message
    over the 16 MiB limit is skipped with an error while the next request is served."""
    client = clients("--script", str(write_script(tmp_path / "s.jsonl", {"text": "fine"})))
    client.start(cwd=str(workspace))
    client.send_raw(b'{"id":41,"method":"turn.cancel"}\n')
    client.send_raw(b'{"jsonrpc":"2.0","id":true,"method":"turn.cancel"}\n')
    client.send_raw(b'{"jsonrpc":"2.0","id":42,"method":"turn.cancel","params":{"pad":"' + b"x" * (16 << 20) + b'"}}\n')
    client.send_raw(b'{"jsonrpc":"2.0","id":43,"method":"turn.cancel"}\n')
    answers = [client.next() for _ in range(4)]
    assert [(m.id, m.error.code if m.error else None) for m in answers] == [
        (41, -32600), (None, -32600), (None, -32600), (43, None)]
    assert "jsonrpc" in answers[0].error.message and "integer or a string" in answers[1].error.message
    assert "over 16777216 bytes" in answers[2].error.message and answers[3].result == {"cancelled": False}
    client.close_stdin()


def test_notifications_get_no_reply_and_a_null_id_is_answered(clients, workspace, tmp_path):
    script = write_script(tmp_path / "s.jsonl", {"text": "from a notification"})
    client = clients("--script", str(script))
    client.start(cwd=str(workspace))
    before = len(client.seen)
    # JSON-RPC 2.0: a notification (no "id" member) is never answered, not even with an error.
    client.send("turn.bogus", {}, id=None)
    client.send("turn.start", {"prompt": "x", "extra": 1}, id=None)
    client.send_raw(b'{"jsonrpc":"2.0","id":null,"method":"turn.cancel"}\n')
    answered = client.next()
    assert answered.id is None and answered.error is None and answered.result == {"cancelled": False}
    client.send("turn.start", {"prompt": "go"}, id=None)     # carried out, unanswered
    done = client.until("turn.completed")
    assert done.params["reply"] == "from a notification"
    after_start = client.seen[before:]
    assert all(m.error is None for m in after_start)
    assert [m for m in after_start if not m.method] == [answered]     # only the null-id request was answered
    client.close_stdin()
    assert client.wait() == 0
    assert "a notification was not carried out: unknown method 'turn.bogus'" in client.stderr()


def test_a_broken_stdout_cancels_the_turn_and_the_server_exits(workspace, tmp_path):
    import subprocess
    import sys
    marker = _marker()
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "gate", "tool": "bash",
                                      "args": {"command": "until [ -e go ]; do sleep 0.05; done"}}]},
                          {"calls": [{"id": "b", "tool": "bash", "args": {"command": f"sleep {marker}"}}]},
                          {"text": "finished"})
    proc = subprocess.Popen([sys.executable, "-m", "scv", "server", "--stdio", "--script", str(script)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=scv_env())
    try:
        for id, method, params in [(1, "initialize", {"protocol_version": 3}),
                                   (2, "session.start", {"cwd": str(workspace), "auto_approve": True}),
                                   (3, "turn.start", {"prompt": "run it"})]:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()
                             + b"\n")
            proc.stdin.flush()
            reply = _skip_to_reply(proc.stdout, id)
            assert "error" not in reply, reply
        proc.stdout.close()         # the client stops reading; its stdin stays open and silent
        (workspace / "go").touch()  # the first call ends: its tool.completed cannot be written
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _assert_gone(marker)            # the second call never ran, or was stopped


def _skip_to_reply(stdout, id: int) -> dict:
    """Reads past notifications to the reply to request `id`."""
    while True:
        message = json.loads(stdout.readline())
        if message.get("id") == id:
            return message
