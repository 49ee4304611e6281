"""`scv batch --engine ray` continues the driver's trace on the nodes: a real Ray cluster on this
machine (`scv cluster head` and a node joined with `scv cluster join`, tests/ray_cluster.py)
whose node has OTEL_* variables of its own pointing elsewhere; the driver traces to an in-memory
OTLP receiver. Each task's span, exported by the node's runner, is a child of the driver's batch
span in the incoming trace, the agent's span is under it, and the agent CLI's TRACEPARENT names
that span: the task carried the context, and the driver's variables replaced the node's."""

import importlib.util
import json
import subprocess
import sys

import pytest

from scv.core import traceparent
from tests.agent_fakes import FakeAgent
from tests.otel_extra import needs_otel
from tests.otlp_receiver import OtlpReceiver
from tests.ray_cluster import Machine, free_port, kill_pids, shared_pids

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed here (pip install 'scv[ray]'; .ci/run installs it)", allow_module_level=True)

SLOW = 180
INCOMING = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID, INCOMING_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
PROMPT = "quick PROMPT-4e1d-of-a-task"
# The node's own telemetry variables: a closed port, another service name. The driver's win.
NODE_OWN = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SERVICE_NAME": "node-own",
            "TRACEPARENT": "00-11111111111111111111111111111111-2222222222222222-01"}


@needs_otel
@pytest.mark.time_limit(420)
def test_ray_tasks_are_children_of_the_drivers_batch_span(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    head = Machine("head", tmp_path / "head", shared).setup()
    node = Machine("node", tmp_path / "node", shared).setup()
    node.codex()
    receiver = OtlpReceiver()
    try:
        started = head.scv("cluster", "head", "--port", str(free_port()), "--node-ip", "127.0.0.1", "--json")
        assert started.returncode == 0, started.stderr
        address = json.loads(started.stdout)["address"]
        token = head.scv_home / "cluster" / "token"
        joined = node.scv("cluster", "join", address, "--token-file", str(token), "--slots", "codex=1",
                          "--node-ip", "127.0.0.1", "--json", **NODE_OWN)
        assert joined.returncode == 0, joined.stderr
        batch = tmp_path / "b.jsonl"
        batch.write_text("".join(json.dumps({"id": name, "agent": "codex", "prompt": f"{PROMPT} {name}"}) + "\n"
                                 for name in ("one", "two")))
        out = tmp_path / "out.jsonl"
        env = head.env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_SERVICE_NAME="ci-run",
                       TRACEPARENT=INCOMING, TRACESTATE="ci=build-17", SCV_TELEMETRY_FLUSH_MS="30000")
        proc = subprocess.run([sys.executable, "-m", "scv", "batch", str(batch), "--engine", "ray", "--address",
                               address, "--token-file", str(token), "--output", str(out), "--quiet"],
                              env=env, cwd=head.workspace, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=SLOW)
        assert proc.returncode == 0, proc.stderr
        assert "telemetry" not in proc.stderr
        results = [json.loads(line) for line in out.read_text().splitlines()]
        assert {line["status"] for line in results} == {"completed"}
        # The runners flushed their task spans before each result line; the driver's run span
        # went at its exit.
        spans = receiver.wait_for("scv batch")
    finally:
        for machine in (node, head):
            machine.leave()
        kill_pids(shared_pids(shared))
        receiver.close()

    ids = {span.span_id: span for span in spans}
    assert {span.trace_id for span in spans} == {TRACE_ID}
    [root] = [span for span in spans if span.parent_id == INCOMING_SPAN]
    assert root.name == "scv batch" and root.attributes["scv.batch.engine"] == "ray"
    assert int(root.attributes["scv.exit_code"]) == 0
    tasks = [span for span in spans if span.name == "scv batch task"]
    agents = [span for span in spans if span.name == "invoke_agent codex"]
    assert sorted(task.attributes["scv.batch.task"] for task in tasks) == ["one", "two"]
    assert {task.parent_id for task in tasks} == {root.span_id}
    assert {task.attributes["scv.batch.status"] for task in tasks} == {"completed"}
    assert sorted(agent.parent_id for agent in agents) == sorted(task.span_id for task in tasks)
    assert all(span.parent_id in ids for span in spans if span is not root)
    assert {span.service for span in spans} == {"ci-run"}       # the node's runner exported as the driver

    # The agent CLI on the node saw its invoke_agent span as parent, not the node's TRACEPARENT.
    codex = FakeAgent("codex", node.home / ".local" / "bin", node.root / "log" / "codex")
    runs = sorted(node.root.joinpath("log", "codex").glob("argv.*"), key=lambda path: int(path.suffix[1:]))
    handed = set()
    for path in runs:
        if PROMPT in path.read_text():
            seen = codex.env(int(path.suffix[1:]))
            handed.add(traceparent.parse(seen["TRACEPARENT"]).span_id)
            assert seen["OTEL_EXPORTER_OTLP_ENDPOINT"] == receiver.endpoint
    assert handed == {agent.span_id for agent in agents}
    assert not [span for span in spans if any(PROMPT in str(value) for value in span.attributes.values())]
