"""SCV as an MCP client, traced: `scv exec` (script provider) calls tools of an MCP server written
with the official SDK (tests/mcp_tool_server.py). Each call is its `execute_tool` span (kind
CLIENT, with the conventions' MCP keys), and the server receives that span as
`_meta.traceparent` (with the run's tracestate) in the `tools/call` params; a call the server
fails is `error.type` = `tool_error`; the server's process has the run's span as TRACEPARENT. Untraced, no traceparent goes out. Spans at the in-memory
OTLP receiver (tests/otlp_receiver.py)."""

import json
import sys
from pathlib import Path

import pytest

from scv.core import traceparent
from tests.conftest import run_scv, scv_env
from tests.fakes import events, write_script
from tests.otel_extra import needs_otel
from tests.otlp_receiver import OtlpReceiver
from tests.test_tracing import TRACE_ID, traced_env

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parent / "mcp_tool_server.py"
CLIENT_KIND = 3


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    marks = tmp_path / "marks"
    marks.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tools": {"command": sys.executable,
                                                           "args": [str(SERVER), "--mark", str(marks)]}}}))
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "t", "tool": "mcp__tools__trace", "args": {}},
                                     {"id": "f", "tool": "mcp__tools__fail", "args": {"reason": "the disk is full"}},
                                     {"id": "e", "tool": "mcp__tools__environment", "args": {"name": "TRACEPARENT"}}]},
                          {"text": "done"})
    return marks, config, script


@needs_otel
def test_an_mcp_tool_call_is_a_client_span_whose_context_the_server_gets_in_meta(receiver, tmp_path, workspace):
    marks, config, script = _setup(tmp_path)
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config), "-C",
                   str(workspace), env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0 and events(proc)[-1]["reply"] == "done", proc.stderr
    spans = receiver.wait_for("scv exec")
    by_name = {span.name: span for span in spans}
    call, failed = by_name["execute_tool mcp__tools__trace"], by_name["execute_tool mcp__tools__fail"]
    assert {span.trace_id for span in spans} == {TRACE_ID}
    assert call.parent_id == by_name["scv turn"].span_id and call.kind == CLIENT_KIND
    keys = call.attributes
    assert keys["mcp.method.name"] == "tools/call" and keys["network.transport"] == "pipe"
    assert keys["mcp.protocol.version"] and keys["jsonrpc.request.id"]
    assert keys["gen_ai.operation.name"] == "execute_tool" and keys["gen_ai.tool.name"] == "mcp__tools__trace"
    assert keys["scv.mcp.server"] == "tools" and keys["scv.mcp.tool"] == "trace"
    assert keys["scv.tool.status"] == "completed" and "error.type" not in keys

    # The server saw the call's own span as its parent, with the run's tracestate.
    parent, state = (marks / "trace").read_text().split()
    seen = traceparent.parse(parent, state)
    assert (seen.trace_id, seen.span_id, seen.state) == (TRACE_ID, call.span_id, "ci=build-17")

    # An isError result: the conventions' tool_error; the keys for the span never reach the model.
    assert failed.attributes["error.type"] == "tool_error" and failed.status_code == 2
    assert failed.attributes["scv.tool.status"] == "failed"
    assert failed.attributes["jsonrpc.request.id"] != keys["jsonrpc.request.id"]
    assert "_mcp_" not in proc.stdout + proc.stderr

    # The server process itself started under the run's span (it starts with the session).
    [environment] = [event["result"] for event in events(proc)
                     if event["type"] == "tool.completed" and event["call_id"] == "e"]
    started = traceparent.parse(environment["content"][0]["text"])
    assert (started.trace_id, started.span_id) == (TRACE_ID, by_name["scv exec"].span_id)


def test_untraced_no_traceparent_goes_to_the_server_and_the_result_is_clean(tmp_path, workspace):
    marks, config, script = _setup(tmp_path)
    env = {name: value for name, value in scv_env().items() if not name.startswith(("OTEL_", "TRACE"))}
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "--mcp-config", str(config), "-C",
                   str(workspace), env=env)
    assert proc.returncode == 0, proc.stderr
    assert (marks / "trace").read_text().split() == ["<none>", "<none>"]
    results = [json.loads(line)["result"] for line in proc.stdout.splitlines() if '"tool.completed"' in line]
    assert len(results) == 3 and not [key for result in results for key in result if key.startswith("_mcp_")]


@pytest.fixture
def receiver():
    found = OtlpReceiver()
    yield found
    found.close()
