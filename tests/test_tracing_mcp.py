"""`scv mcp`'s spans, with the official MCP SDK's client as the host and an in-memory OTLP
receiver (tests/otlp_receiver.py): the connection is the run `scv mcp`, a child of the incoming
TRACEPARENT; each `tools/call` is a SERVER span `tools/call {tool}` with the MCP keys, under the
host's span when the request's `_meta` names one, else under the run; what the call starts (a
command, a delegated agent) names that span as its parent; a call the host declines is an error
`tool_error`; no span carries the delegated prompt."""

import asyncio
import sys

import pytest

from scv.core import traceparent
from tests.agent_fakes import install, on_cli
from tests.conftest import ROOT, scv_env
from tests.otel_extra import needs_otel
from tests.otlp_receiver import OtlpReceiver

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.types import ElicitResult  # noqa: E402

INCOMING = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID, INCOMING_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
HOST_TRACE, HOST_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
PROMPT = "DELEGATED-8a2f-prompt"
SERVER_KIND = 2


@needs_otel
def test_mcp_tool_calls_are_server_spans_under_the_hosts_meta_or_the_connection(tmp_path, scv_home):
    user_home, workspace = tmp_path / "user", tmp_path / "ws"
    workspace.mkdir()
    (scv_home / "config.toml").write_text(on_cli())
    codex = install(user_home / ".local" / "bin", "codex", tmp_path / "log" / "codex")
    codex.replay("codex", "text")
    receiver = OtlpReceiver()
    env = {name: value for name, value in scv_env(HOME=str(user_home), PATH="/usr/bin:/bin",
                                                  SCV_HOME=str(scv_home)).items()
           if not name.startswith(("OTEL_", "TRACE"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="http/json",
               TRACEPARENT=INCOMING, SCV_TELEMETRY_FLUSH_MS="30000")
    params = StdioServerParameters(command=sys.executable, args=["-m", "scv", "mcp", "-C", str(workspace),
                                                                 "--tools", "bash"], env=env, cwd=str(ROOT))

    async def elicit(context, request):
        return ElicitResult(action="decline" if "refused.txt" in request.message else "accept")

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as session:
                await session.initialize()
                meta = {"traceparent": f"00-{HOST_TRACE}-{HOST_SPAN}-01", "tracestate": "host=1"}
                ran = await session.call_tool("bash", {"command": 'printf %s "$TRACEPARENT" > seen.txt'}, meta=meta)
                declined = await session.call_tool("bash", {"command": "echo no > refused.txt"})
                delegated = await session.call_tool("agent", {"agent": "codex", "prompt": PROMPT})
                return ran, declined, delegated
    try:
        ran, declined, delegated = asyncio.run(asyncio.wait_for(main(), 180))
        spans = receiver.wait_for("scv mcp")
    finally:
        receiver.close()
    assert ran.isError is False and declined.isError is True and delegated.isError is False
    assert not (workspace / "refused.txt").exists()

    by_name: dict[str, list] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    [run] = by_name["scv mcp"]
    assert run.parent_id == INCOMING_SPAN and run.trace_id == TRACE_ID
    assert run.attributes["network.transport"] == "pipe" and run.attributes["mcp.protocol.version"]
    bash_calls = sorted(by_name["tools/call bash"], key=lambda span: int(span.attributes["jsonrpc.request.id"]))
    [agent_call] = by_name["tools/call agent"]
    [invoked] = by_name["invoke_agent codex"]
    for call in (*bash_calls, agent_call):
        assert call.kind == SERVER_KIND
        assert call.attributes["mcp.method.name"] == "tools/call"
        assert call.attributes["gen_ai.operation.name"] == "execute_tool"
        assert call.attributes["mcp.protocol.version"] == run.attributes["mcp.protocol.version"]

    # The call whose _meta names the host's span continues the host's trace.
    first, second = bash_calls
    assert (first.trace_id, first.parent_id) == (HOST_TRACE, HOST_SPAN)
    assert first.attributes["gen_ai.tool.name"] == "bash" and first.attributes["scv.tool.risk"] == "process"
    assert first.attributes["scv.tool.approval"] == "approved" and first.attributes["scv.tool.status"] == "completed"
    assert "error.type" not in first.attributes and first.status_code != 2
    seen = traceparent.parse((workspace / "seen.txt").read_text())
    assert (seen.trace_id, seen.span_id) == (HOST_TRACE, first.span_id)

    # Without _meta, a call is under the connection's run; declined, it is a tool_error.
    assert (second.trace_id, second.parent_id) == (TRACE_ID, run.span_id)
    assert second.attributes["scv.tool.approval"] == "denied" and second.attributes["scv.tool.status"] == "refused"
    assert second.attributes["error.type"] == "tool_error" and second.status_code == 2

    # A delegated agent goes under its call, and the agent process under its invoke_agent span.
    assert (agent_call.trace_id, agent_call.parent_id) == (TRACE_ID, run.span_id)
    assert agent_call.attributes["scv.tool.risk"] == "delegate" and agent_call.attributes["scv.tool.status"] == \
        "completed"
    assert invoked.parent_id == agent_call.span_id
    assert traceparent.parse(codex.env()["TRACEPARENT"]).span_id == invoked.span_id
    assert not [span for span in spans if any(PROMPT in str(value) for value in span.attributes.values())]
    assert not [body for body in receiver.raw if PROMPT.encode() in body]


@needs_otel
@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_initialize_and_tools_list_are_spans_and_a_call_under_the_hosts_span_links_the_connection(
        tmp_path, scv_home, protocol):
    from mcp.types import PaginatedRequestParams
    workspace = tmp_path / "ws"
    workspace.mkdir()
    receiver = OtlpReceiver()
    env = {name: value for name, value in scv_env(SCV_HOME=str(scv_home)).items()
           if not name.startswith(("OTEL_", "TRACE"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
               TRACEPARENT=INCOMING, SCV_TELEMETRY_FLUSH_MS="30000")
    params = StdioServerParameters(command=sys.executable, args=["-m", "scv", "mcp", "-C", str(workspace),
                                                                 "--tools", "bash", "--auto-approve"], env=env,
                                   cwd=str(ROOT))
    host = {"traceparent": f"00-{HOST_TRACE}-{HOST_SPAN}-01"}

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools(params=PaginatedRequestParams(_meta=host))
                ran = await session.call_tool("bash", {"command": "true"}, meta=host)
                return listed, ran
    try:
        listed, ran = asyncio.run(asyncio.wait_for(main(), 120))
        spans = receiver.wait_for("scv mcp")
    finally:
        receiver.close()
    assert [tool.name for tool in listed.tools] == ["bash"] and ran.isError is False
    [run] = [span for span in spans if span.name == "scv mcp"]
    [initialize] = [span for span in spans if span.name == "initialize"]
    lists = [span for span in spans if span.name == "tools/list"]
    [call] = [span for span in spans if span.name == "tools/call bash"]

    # initialize has no _meta here: under the connection, with the negotiated version.
    assert (initialize.trace_id, initialize.parent_id, initialize.kind) == (TRACE_ID, run.span_id, SERVER_KIND)
    assert initialize.attributes["mcp.method.name"] == "initialize" and initialize.links == []
    assert initialize.attributes["mcp.protocol.version"] == run.attributes["mcp.protocol.version"]
    assert initialize.attributes["network.transport"] == "pipe" and initialize.attributes["jsonrpc.request.id"]
    # Our tools/list names the host's span; one the SDK may send itself does not.
    ours = [span for span in lists if span.parent_id == HOST_SPAN]
    assert len(ours) == 1 and ours[0].trace_id == HOST_TRACE and ours[0].kind == SERVER_KIND
    assert ours[0].attributes["mcp.method.name"] == "tools/list"
    assert ours[0].links == [(TRACE_ID, run.span_id)]
    assert all(span.parent_id == run.span_id and span.links == [] for span in lists if span is not ours[0])
    # The call continues the host's trace and links the connection it came on.
    assert (call.trace_id, call.parent_id) == (HOST_TRACE, HOST_SPAN)
    assert call.links == [(TRACE_ID, run.span_id)]
