"""One trace for a whole run: `scv exec` (script provider) delegates to a fake Codex CLI and runs
`bash`, exporting to an in-memory OTLP/HTTP receiver (tests/otlp_receiver.py). Every span joins
the incoming TRACEPARENT's trace as one tree, the command and the agent see their own span as
parent, no span carries text unless the user's config allows it, and a collector that never
answers costs the run its bounded flush and one line. Real processes throughout. The tests that
need the scv[otel] extra are marked `needs_otel` (tests/otel_extra.py) and skip without it; the
rest (a run without the extra, `_meta` accepted untraced, ...) always run."""

import json
import os
import subprocess
import sys
import time

import pytest

from scv.core import traceparent
from tests.agent_fakes import install, on_cli
from tests.conftest import run_scv, scv_env
from tests.fakes import events, write_script
from tests.otel_extra import needs_otel
from tests.otlp_receiver import OtlpReceiver

INCOMING = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID, INCOMING_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
SECRETS = ("PROMPT-7f3a-of-the-task", "DELEGATED-9c1e-prompt", "REPLY-5d2b-of-the-run")


@pytest.fixture
def receiver():
    found = OtlpReceiver()
    yield found
    found.close()


def traced_env(endpoint: str, **variables: str) -> dict[str, str]:
    env = {name: value for name, value in scv_env().items() if not name.startswith(("OTEL_", "TRACE"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, TRACEPARENT=INCOMING, TRACESTATE="ci=build-17",
               OTEL_SERVICE_NAME="ci-run", **variables)
    return env


def _texts(span) -> list[str]:
    values = [span.name, *map(str, span.attributes.values())]
    for name, attributes in span.events:
        values += [name, *map(str, attributes.values())]
    return values


@needs_otel
@pytest.mark.parametrize("protocol, content_type", [("http/protobuf", "application/x-protobuf"),
                                                    ("http/json", "application/json")])
def test_one_trace_from_the_run_through_the_agent_to_the_command(receiver, protocol, content_type, tmp_path,
                                                                 workspace, user_home, scv_home):
    (scv_home / "config.toml").write_text(on_cli())
    codex = install(user_home / ".local" / "bin", "codex", tmp_path / "log" / "codex")
    codex.replay("codex", "resume_0_first")
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "a", "tool": "agent", "args": {"agent": "codex", "prompt": SECRETS[1]}}]},
                          {"calls": [{"id": "b", "tool": "bash",
                                      "args": {"command": 'printf %s "$TRACEPARENT" > seen.txt'}}]},
                          {"text": SECRETS[2]})
    proc = run_scv("exec", SECRETS[0], "--script", str(script), "--json", "--auto-approve", "-C", str(workspace),
                   env=traced_env(receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
                                  SCV_TELEMETRY_FLUSH_MS="30000"))   # this test wants every span, however slow
    assert proc.returncode == 0, proc.stderr
    assert events(proc)[-1]["reply"] == SECRETS[2]
    assert "telemetry" not in proc.stderr
    spans = receiver.wait_for("scv exec")
    assert {export.content_type for export in receiver.exports} == {content_type}
    by_name = {span.name: span for span in spans}
    assert set(by_name) == {"scv exec", "scv turn", "chat script:s.jsonl", "execute_tool agent",
                            "invoke_agent codex", "execute_tool bash"}
    assert len(spans) == 8          # three model requests

    # One trace, one tree, rooted at the incoming span.
    ids = {span.span_id for span in spans}
    assert len(ids) == len(spans)
    assert {span.trace_id for span in spans} == {TRACE_ID}
    assert [span.name for span in spans if span.parent_id == INCOMING_SPAN] == ["scv exec"]
    assert all(span.parent_id in ids for span in spans if span.name != "scv exec")
    parent_of = {span.name: next(s.name for s in spans if s.span_id == span.parent_id) for span in spans
                 if span.name != "scv exec"}
    assert parent_of == {"scv turn": "scv exec", "chat script:s.jsonl": "scv turn", "execute_tool agent": "scv turn",
                         "invoke_agent codex": "execute_tool agent", "execute_tool bash": "scv turn"}
    assert {span.service for span in spans} == {"ci-run"}

    # What the spans say.
    bash, agent = by_name["execute_tool bash"].attributes, by_name["invoke_agent codex"].attributes
    assert bash["scv.tool.risk"] == "process" and bash["scv.tool.approval"] == "auto"
    assert bash["scv.tool.status"] == "completed" and bash["gen_ai.tool.name"] == "bash"
    assert agent["scv.agent.transport"] == "cli" and agent["gen_ai.agent.name"] == "codex"
    assert agent["gen_ai.conversation.id"] == "codex-1" and agent["scv.agent.status"] == "completed"
    assert int(agent["gen_ai.usage.input_tokens"]) > 0
    assert by_name["execute_tool agent"].attributes["scv.tool.risk"] == "delegate"
    chat = by_name["chat script:s.jsonl"].attributes
    assert chat["gen_ai.system"] == "script" and chat["gen_ai.operation.name"] == "chat"

    # Context out: the command's parent is its tool span, the agent's its invoke_agent span.
    seen = traceparent.parse((workspace / "seen.txt").read_text())
    assert seen is not None and seen.trace_id == TRACE_ID and seen.span_id == by_name["execute_tool bash"].span_id
    agent_env = codex.env()
    handed = traceparent.parse(agent_env["TRACEPARENT"], agent_env.get("TRACESTATE"))
    assert handed.span_id == by_name["invoke_agent codex"].span_id and handed.state == "ci=build-17"
    assert agent_env["OTEL_SERVICE_NAME"] == "codex"

    # No prompt or reply text anywhere, neither in the spans nor in the bytes sent.
    assert not [text for span in spans for text in _texts(span) if any(secret in text for secret in SECRETS)]
    assert not [secret for secret in SECRETS for body in receiver.raw if secret.encode() in body]


@needs_otel
def test_content_true_in_the_users_config_puts_text_on_spans(receiver, tmp_path, workspace, scv_home):
    (scv_home / "config.toml").write_text("[telemetry]\ncontent = true\n")
    script = write_script(tmp_path / "s.jsonl", {"text": SECRETS[2]})
    proc = run_scv("exec", SECRETS[0], "--script", str(script), "-C", str(workspace),
                   env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0, proc.stderr
    turn = next(span for span in receiver.wait_for("scv exec") if span.name == "scv turn")
    assert turn.attributes["scv.prompt"] == SECRETS[0] and turn.attributes["scv.reply"] == SECRETS[2]


def test_a_project_config_cannot_turn_content_on(tmp_path, workspace):
    (workspace / ".scv").mkdir()
    (workspace / ".scv" / "config.toml").write_text("[telemetry]\ncontent = true\n")
    script = write_script(tmp_path / "s.jsonl", {"text": "x"})
    proc = run_scv("exec", "--script", str(script), "-C", str(workspace))
    assert proc.returncode == 2 and "telemetry.content may not be set by a project config" in proc.stderr


@needs_otel
def test_a_collector_that_never_answers_costs_the_bounded_flush_and_one_line(tmp_path, workspace):
    silent = OtlpReceiver(answer=False)
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"tool": "bash", "args": {"command": "true"}}]},
                          {"text": "finished"})
    # The exporter itself would wait a minute for an answer; the run must not.
    env = traced_env(silent.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="60")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "scv", "exec", "--script", str(script), "--json",
                                 "--auto-approve", "-C", str(workspace)], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            lines = []
            while not (lines and b'"turn.completed"' in lines[-1]):
                line = proc.stdout.readline()
                assert line, f"scv exec ended without its result: {proc.stderr.read()!r}"
                lines.append(line)
            printed = time.monotonic()
            # From the printed result to exit: the flush's 200 ms plus the process's own teardown;
            # the deadline is loose (a loaded machine), but far below the exporter's minute.
            code = proc.wait(timeout=30)
            ended = time.monotonic()
            err = proc.stderr.read().decode()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        silent.close()
    assert code == 0
    assert ended - printed < 10, f"exit came {ended - printed:.1f} s after the result"
    lines = telemetry_lines(err)
    assert len(lines) == 1 and lines[0].startswith("scv: telemetry: "), err
    assert "dropped" in lines[0] and silent.endpoint in lines[0]


def telemetry_lines(stderr: str) -> list[str]:
    """stderr without the run's closing usage line, which every scv exec prints (docs/limits.md)."""
    lines = stderr.splitlines()
    usage = [line for line in lines if line.startswith("scv: usage: ")]
    assert len(usage) == 1, stderr
    return [line for line in lines if line not in usage]


def _untraced(tmp_path, workspace, env) -> subprocess.CompletedProcess:
    script = write_script(tmp_path / "s.jsonl", {"text": "finished"})
    return run_scv("exec", "--script", str(script), "-C", str(workspace), env=env)


def test_grpc_is_one_line_and_the_run_goes_untraced(receiver, tmp_path, workspace):
    proc = _untraced(tmp_path, workspace, traced_env(receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="grpc"))
    assert proc.returncode == 0 and proc.stdout.strip() == "finished"
    lines = telemetry_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("scv: telemetry: ") and "grpc" in lines[0], proc.stderr
    assert receiver.exports == []


def test_without_the_extra_one_line_names_it(tmp_path, workspace):
    """An `opentelemetry` package that cannot be imported stands in for a missing extra."""
    blocker = tmp_path / "blocked" / "opentelemetry"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = traced_env("http://127.0.0.1:9")
    env["PYTHONPATH"] = f"{blocker.parent}{os.pathsep}{env['PYTHONPATH']}"
    proc = _untraced(tmp_path, workspace, env)
    assert proc.returncode == 0 and proc.stdout.strip() == "finished"
    lines = telemetry_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("scv: telemetry: ") and "scv[otel]" in lines[0], proc.stderr


@needs_otel
def test_over_acp_the_prompt_carries_the_agent_span_and_a_relayed_permission_is_an_event(
        receiver, tmp_path, user_home, workspace, scv_home):
    from tests.live_fakes import install_peer
    server = install_peer(user_home, tmp_path / "peer-log", "claude-agent-acp")
    install(user_home / ".local" / "bin", "claude", tmp_path / "cli-log").replay("claude", "resume_turn1")
    (scv_home / "config.toml").write_text('[agents.claude]\ntransport = "acp"\n')
    target = workspace / "target.txt"
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "a", "tool": "agent",
                                      "args": {"agent": "claude", "prompt": f"permission edit {target}"}}]},
                          {"calls": [{"id": "b", "tool": "bash",
                                      "args": {"command": 'printf %s "$TRACEPARENT" > seen.txt'}}]},
                          {"text": "{{a.reply}}"})
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "-C", str(workspace),
                   env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "written by the peer\n"
    spans = receiver.wait_for("scv exec")
    by_name = {span.name: span for span in spans}
    agent = by_name["invoke_agent claude"]
    assert agent.parent_id == by_name["execute_tool agent"].span_id
    assert agent.attributes["scv.agent.transport"] == "acp"
    [(event, fields)] = agent.events
    assert event == "scv.permission_request" and fields["scv.tool.approval"] == "approved"
    # The server started under the agent span, and its prompt carries it in _meta.
    [started] = server.events("start")
    assert traceparent.parse(started["env"]["TRACEPARENT"]).span_id == agent.span_id
    [prompt] = server.events("session/prompt")
    meta = traceparent.from_meta(prompt["meta"])
    assert meta.trace_id == TRACE_ID and meta.span_id == agent.span_id and meta.state == "ci=build-17"
    seen = traceparent.parse((workspace / "seen.txt").read_text())
    assert seen.span_id == by_name["execute_tool bash"].span_id
    ids = {span.span_id for span in spans}
    assert all(span.parent_id in ids for span in spans if span.name != "scv exec")
    assert not [span for span in spans if any(str(target) in text for text in _texts(span))]


CALLER_SPAN = "00f067aa0ba902b7"        # the span of a parent SCV's agent call, sent in _meta


def _serve_one_turn(clients, tmp_path, workspace, env) -> None:
    script = write_script(tmp_path / "s.jsonl", {"calls": [{"tool": "bash", "args": {"command": "true"}}]},
                          {"text": "served"})
    client = clients("--script", str(script), env=env)
    client.start(cwd=str(workspace), auto_approve=True)
    meta = {"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01", "tracestate": "ci=build-17", "other": {"ignored": 1}}
    client.request("turn.start", {"prompt": "go", "_meta": meta})
    assert client.until("turn.completed").params["reply"] == "served"
    client.request("session.close", {"_meta": {}})
    client.close_stdin()
    assert client.wait() == 0


@needs_otel
def test_a_served_turn_is_a_child_of_the_span_in_its_meta(clients, receiver, tmp_path, workspace):
    _serve_one_turn(clients, tmp_path, workspace, traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    spans = receiver.wait_for("scv server")
    by_name = {span.name: span for span in spans}
    assert by_name["scv server"].parent_id == INCOMING_SPAN
    assert by_name["scv turn"].parent_id == CALLER_SPAN
    assert by_name["execute_tool bash"].parent_id == by_name["scv turn"].span_id
    assert {span.trace_id for span in spans} == {TRACE_ID}


def test_meta_is_accepted_untraced_and_other_unknown_params_are_still_refused(clients, tmp_path, workspace):
    env = {name: value for name, value in scv_env().items() if not name.startswith("OTEL_")}
    _serve_one_turn(clients, tmp_path, workspace, env)
    client = clients(env=env)
    client.send("initialize", {"protocol_version": 3, "_meta": {"traceparent": "garbage"}}, id=1)
    assert client.response(1).result["protocol_version"] == 3
    client.send("session.start", {"cwd": str(workspace), "_metta": {}}, id=2)
    assert "_metta" in client.response(2).error.message


@needs_otel
@pytest.mark.time_limit(300)
def test_two_nested_scvs_continue_the_trace(receiver, tmp_path, monkeypatch, workspace, scv_home):
    """scv exec -> nested SCV (depth 1) -> nested SCV (depth 2) -> bash: each level's own run
    span is the child of the agent span that started it, and each turn the child of the agent
    call that sent its turn.start."""
    import json as _json
    from tests.fake_openai import FakeOpenAI, Reply
    from tests.fakes import setup_fake_home
    setup_fake_home(tmp_path, monkeypatch)       # no `scv` on PATH: the nested SCV is this one
    first, second = FakeOpenAI(), FakeOpenAI()
    try:
        homes = [scv_home / "agents" / "scv", scv_home / "agents" / "scv" / "agents" / "scv"]
        for home, provider in zip(homes, (first, second)):
            home.mkdir(parents=True)
            (home / "config.toml").write_text(provider.config("chat").replace('api_key_env = "FAKE_OPENAI_KEY"',
                                                                              'api_key = "sk-test"'))
        first.enqueue(Reply(calls=[("n2", "agent", _json.dumps({"agent": "scv", "prompt": "go deeper"}))]),
                      Reply(text="level one done"))
        second.enqueue(Reply(calls=[("b", "bash", _json.dumps({"command": 'printf %s "$TRACEPARENT" > deep.txt'}))]),
                       Reply(text="level two done"))
        script = write_script(tmp_path / "s.jsonl",
                              {"calls": [{"id": "a", "tool": "agent", "args": {"agent": "scv", "prompt": "go"}}]},
                              {"text": "{{a.reply}}"})
        # Spans of the nested servers go out while they run (their run spans at their exit).
        proc = run_scv("exec", "--script", str(script), "--auto-approve", "-C", str(workspace), timeout=240,
                       env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000",
                                      OTEL_BSP_SCHEDULE_DELAY="50"))
    finally:
        first.close()
        second.close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "level one done"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(s.name == "scv server" for s in receiver.spans) < 2:
        receiver.wait_for("never", deadline_seconds=0.2)
    spans = receiver.spans
    ids = {span.span_id: span for span in spans}
    assert {span.trace_id for span in spans} == {TRACE_ID}
    assert [span.name for span in spans if span.parent_id == INCOMING_SPAN] == ["scv exec"]
    assert all(span.parent_id in ids for span in spans if span.name != "scv exec")
    agents = [span for span in spans if span.name == "invoke_agent scv"]
    servers = [span for span in spans if span.name == "scv server"]
    assert len(agents) == 2 and len(servers) == 2
    assert {server.parent_id for server in servers} == {agent.span_id for agent in agents}
    assert {server.service for server in servers} == {"scv"}
    turns = [span for span in spans if span.name == "scv turn"]
    assert len(turns) == 3 and {agent.span_id for agent in agents} < {turn.parent_id for turn in turns}

    def depth(span) -> int:
        return 0 if span.name == "scv exec" else 1 + depth(ids[span.parent_id])

    [bash] = [span for span in spans if span.name == "execute_tool bash"]
    deep = traceparent.parse((workspace / "deep.txt").read_text())
    assert deep.trace_id == TRACE_ID and deep.span_id == bash.span_id
    assert depth(bash) == 8     # under exec: turn, tool, agent, turn, tool, agent, turn, tool (two levels)


@needs_otel
def test_scv_batch_traces_its_run_and_each_task(receiver, tmp_path, user_home, workspace, scv_home):
    (scv_home / "config.toml").write_text(on_cli())
    codex = install(user_home / ".local" / "bin", "codex", tmp_path / "log" / "codex")
    codex.replay("codex", "resume_0_first")
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(f'{{"id": "{name}", "agent": "codex", "prompt": "{SECRETS[1]} {name}"}}\n'
                             for name in ("one", "two")))
    proc = run_scv("batch", str(batch), "--parallel", "1", "--quiet", "-C", str(workspace),
                   env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0, proc.stderr
    spans = receiver.wait_for("scv batch")
    ids = {span.span_id: span for span in spans}
    [root] = [span for span in spans if span.parent_id == INCOMING_SPAN]
    tasks = [span for span in spans if span.name == "scv batch task"]
    agents = [span for span in spans if span.name == "invoke_agent codex"]
    assert root.name == "scv batch" and {span.trace_id for span in spans} == {TRACE_ID}
    assert sorted(task.attributes["scv.batch.task"] for task in tasks) == ["one", "two"]
    assert {task.parent_id for task in tasks} == {root.span_id}
    assert sorted(agent.parent_id for agent in agents) == sorted(task.span_id for task in tasks)
    # One task at a time: the fake numbers its logs by counting them.
    handed = {traceparent.parse(codex.env(index)["TRACEPARENT"]).span_id for index in range(2)}
    assert handed == {agent.span_id for agent in agents}
    assert all(span.parent_id in ids for span in spans if span is not root)
    assert not [span for span in spans if any(SECRETS[1] in text for text in _texts(span))]


@needs_otel
def test_invoke_agent_spans_carry_the_usage_ledger_tokens_without_a_cost_and_the_cost_with_its_source(
        receiver, tmp_path, user_home, workspace, scv_home):
    (scv_home / "config.toml").write_text(on_cli())
    install(user_home / ".local" / "bin", "claude", tmp_path / "log" / "claude").replay("claude", "resume_turn1")
    install(user_home / ".local" / "bin", "codex", tmp_path / "log" / "codex").replay("codex", "resume_0_first")
    script = write_script(tmp_path / "s.jsonl",
                          {"calls": [{"id": "a", "tool": "agent", "args": {"agent": "claude", "prompt": "one"}}]},
                          {"calls": [{"id": "b", "tool": "agent", "args": {"agent": "codex", "prompt": "two"}}]},
                          {"text": "done"})
    proc = run_scv("exec", "--script", str(script), "--json", "--auto-approve", "-C", str(workspace),
                   env=traced_env(receiver.endpoint, SCV_TELEMETRY_FLUSH_MS="30000"))
    assert proc.returncode == 0, proc.stderr
    usage = {event["result"]["agent"]: event["result"]["usage"] for event in events(proc)
             if event.get("type") == "tool.completed"}
    spans = {span.name: span.attributes for span in receiver.wait_for("scv exec")}
    claude, codex = spans["invoke_agent claude"], spans["invoke_agent codex"]

    # Claude reports its cost: the span has it, where it came from, and the tokens.
    assert usage["claude"]["cost_usd"] == pytest.approx(0.000144) and usage["claude"]["cost_source"] == "reported"
    assert claude["scv.cost_usd"] == pytest.approx(0.000144) and claude["scv.cost_source"] == "reported"
    assert int(claude["gen_ai.usage.output_tokens"]) == usage["claude"]["output_tokens"] == 5
    assert int(claude["scv.usage.turns"]) == usage["claude"]["turns"] == 1

    # Codex reports tokens but no cost: the tokens are there, no cost is made up. The GenAI input
    # count includes cached input (the ledger's does not).
    assert usage["codex"]["cost_usd"] is None and usage["codex"]["cached_input_tokens"] > 0
    assert "scv.cost_usd" not in codex and "scv.cost_source" not in codex
    assert int(codex["gen_ai.usage.input_tokens"]) == (usage["codex"]["input_tokens"]
                                                       + usage["codex"]["cached_input_tokens"])
    assert int(codex["gen_ai.usage.cache_read.input_tokens"]) == usage["codex"]["cached_input_tokens"]
    assert int(codex["gen_ai.usage.output_tokens"]) == usage["codex"]["output_tokens"] > 0


@needs_otel
def test_a_run_one_runner_sends_each_tasks_span_before_its_result(receiver, tmp_path, monkeypatch, workspace):
    """What a Ray task's runner does (tests/test_tracing_ray.py runs it on a cluster): the task's
    span is a child of the context its line carries, and it is at the collector by the time the
    result line is written, though the runner goes on (the batch delay is left at 5 s)."""
    from scv.batch.run_one import encode_task
    from scv.batch.tasks import TaskLine
    from tests.delegation_fakes import fake_agent
    from tests.fakes import setup_fake_home
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "printf '%s\\n' '{\"type\":\"item.completed\",\"item\":{\"id\":\"i\","
                                  "\"type\":\"agent_message\",\"text\":\"done\"}}'\n")
    driver = traceparent.parse(INCOMING)
    env = traced_env(receiver.endpoint)
    del env["TRACEPARENT"], env["TRACESTATE"]       # a runner's parent comes with each task
    proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", "--run-one", "-C", str(workspace)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def result_of(line: bytes) -> dict:
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            while True:
                out = proc.stdout.readline()
                assert out, proc.stderr.read()
                if b'"result"' in out:
                    return json.loads(out)["result"]

        traced = result_of(encode_task(TaskLine(id="t1", prompt=SECRETS[1], agent="codex"), 1, 1, trace=driver))
        assert traced["status"] == "completed"
        [task] = [span for span in receiver.spans if span.name == "scv batch task"]
        assert (task.trace_id, task.parent_id) == (TRACE_ID, INCOMING_SPAN)
        assert task.attributes["scv.batch.task"] == "t1" and task.attributes["scv.batch.status"] == "completed"
        untraced = result_of(encode_task(TaskLine(id="t2", prompt="x", agent="codex"), 2, 1))
        assert untraced["status"] == "completed"
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    spans = receiver.spans
    assert [span.name for span in spans if span.name == "scv batch task"] == ["scv batch task"]   # t2: no span
    [agent] = [span for span in spans if span.name == "invoke_agent codex"]
    assert agent.parent_id == task.span_id and {span.trace_id for span in spans} == {TRACE_ID}
    assert not [body for body in receiver.raw if SECRETS[1].encode() in body]


def test_a_run_one_runner_without_the_extra_notes_it_on_its_first_traced_result(tmp_path, monkeypatch, workspace):
    """A node without scv[otel]: its runner's stderr is a log nobody reads, so the missing-extra
    line rides on the result line of the first traced task (the driver prints it once, see
    tests/test_batch_runner.py), and the task itself runs untraced."""
    from scv.batch.run_one import decode_line, encode_task
    from scv.batch.tasks import TaskLine
    from tests.delegation_fakes import fake_agent
    from tests.fakes import setup_fake_home
    setup_fake_home(tmp_path, monkeypatch)
    fake_agent(tmp_path, "codex", "printf '%s\\n' '{\"type\":\"item.completed\",\"item\":{\"id\":\"i\","
                                  "\"type\":\"agent_message\",\"text\":\"done\"}}'\n")
    blocker = tmp_path / "blocked" / "opentelemetry"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = traced_env("http://127.0.0.1:9")
    del env["TRACEPARENT"], env["TRACESTATE"]
    env["PYTHONPATH"] = f"{blocker.parent}{os.pathsep}{env['PYTHONPATH']}"
    driver = traceparent.parse(INCOMING)
    tasks = b"".join(encode_task(TaskLine(id=f"t{n}", prompt="x", agent="codex"), n, 1, trace=driver) + b"\n"
                     for n in (1, 2))
    proc = subprocess.run([sys.executable, "-m", "scv", "batch", "--run-one", "-C", str(workspace)], env=env,
                          input=tasks, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = [decode_line(line) for line in proc.stdout.splitlines() if b'"result"' in line]
    assert [result.result["status"] for result in results] == ["completed", "completed"]
    first, second = results
    assert first.note is not None and first.note.startswith("scv: telemetry: ") and "scv[otel]" in first.note
    assert second.note is None and b'"note"' not in proc.stdout.splitlines()[-1]
