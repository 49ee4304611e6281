"""`scv tool NAME ARGS` traced like `scv exec`: the run `scv tool`, a child of the incoming
TRACEPARENT, holds the call's `execute_tool {tool}` span; a command it runs and an agent it
delegates to name their own spans as TRACEPARENT; a call refused before it runs is still a span,
marked refused. Real processes, spans at the in-memory OTLP receiver (tests/otlp_receiver.py)."""

import json

import pytest

from scv.core import traceparent
from tests.agent_fakes import install, on_cli
from tests.conftest import run_scv
from tests.otel_extra import needs_otel
from tests.otlp_receiver import OtlpReceiver
from tests.test_tracing import INCOMING_SPAN, TRACE_ID, traced_env

PROMPT = "DELEGATED-4e1d-tool-prompt"


@pytest.fixture
def receiver():
    found = OtlpReceiver()
    yield found
    found.close()


def _tree(spans) -> dict[str, str]:
    """Each span's name -> its parent's name ("<incoming>" for the CI's span)."""
    names = {span.span_id: span.name for span in spans}
    names[INCOMING_SPAN] = "<incoming>"
    return {span.name: names[span.parent_id] for span in spans}


@needs_otel
def test_scv_tool_bash_is_a_run_span_with_its_tool_span_and_the_command_sees_it(receiver, workspace):
    proc = run_scv("tool", "bash", json.dumps({"command": 'printf %s "$TRACEPARENT" > seen.txt'}), "--auto-approve",
                   "-C", str(workspace), env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0, proc.stderr
    assert "telemetry" not in proc.stderr
    spans = receiver.wait_for("scv tool")
    assert {span.trace_id for span in spans} == {TRACE_ID}
    assert _tree(spans) == {"scv tool": "<incoming>", "execute_tool bash": "scv tool"}
    by_name = {span.name: span for span in spans}
    run, bash = by_name["scv tool"].attributes, by_name["execute_tool bash"].attributes
    assert run["gen_ai.tool.name"] == "bash" and int(run["scv.exit_code"]) == 0
    assert bash["gen_ai.operation.name"] == "execute_tool" and bash["scv.tool.risk"] == "process"
    assert bash["scv.tool.approval"] == "auto" and bash["scv.tool.status"] == "completed"
    assert {span.service for span in spans} == {"ci-run"}
    seen = traceparent.parse((workspace / "seen.txt").read_text())
    assert (seen.trace_id, seen.span_id) == (TRACE_ID, by_name["execute_tool bash"].span_id)


@needs_otel
def test_scv_tool_agent_hands_the_agent_its_invoke_agent_span(receiver, tmp_path, workspace, user_home, scv_home):
    (scv_home / "config.toml").write_text(on_cli())
    codex = install(user_home / ".local" / "bin", "codex", tmp_path / "log" / "codex")
    codex.replay("codex", "resume_0_first")
    proc = run_scv("tool", "agent", json.dumps({"agent": "codex", "prompt": PROMPT}), "--auto-approve",
                   "-C", str(workspace), env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0, proc.stderr
    spans = receiver.wait_for("scv tool")
    assert {span.trace_id for span in spans} == {TRACE_ID}
    assert _tree(spans) == {"scv tool": "<incoming>", "execute_tool agent": "scv tool",
                            "invoke_agent codex": "execute_tool agent"}
    by_name = {span.name: span for span in spans}
    assert by_name["execute_tool agent"].attributes["scv.tool.risk"] == "delegate"
    assert by_name["invoke_agent codex"].attributes["scv.agent.transport"] == "cli"
    handed = traceparent.parse(codex.env()["TRACEPARENT"], codex.env().get("TRACESTATE"))
    assert handed.span_id == by_name["invoke_agent codex"].span_id and handed.state == "ci=build-17"
    assert not [body for body in receiver.raw if PROMPT.encode() in body]


@needs_otel
def test_a_refused_scv_tool_call_is_a_refused_span_and_the_run_fails(receiver, workspace):
    proc = run_scv("tool", "bash", json.dumps({"command": "echo no > refused.txt"}), "-C", str(workspace),
                   env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 2 and "--auto-approve" in proc.stderr
    assert not (workspace / "refused.txt").exists()
    by_name = {span.name: span for span in receiver.wait_for("scv tool")}
    bash, run = by_name["execute_tool bash"], by_name["scv tool"]
    assert bash.attributes["scv.tool.status"] == "refused" and bash.attributes["scv.tool.approval"] == "denied"
    assert bash.status_code == 2 and run.status_code == 2 and int(run.attributes["scv.exit_code"]) == 2
