"""`scv exec` against a fake OpenAI-compatible endpoint, as a real process, over both wire APIs."""

import json

import pytest

from tests.conftest import run_scv, scv_env
from tests.fake_openai import Cut, FakeOpenAI, Raw, Reply, Status
from tests.fakes import events


@pytest.fixture
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


def configure(scv_home, fake, wire_api="responses", extra=""):
    (scv_home / "config.toml").write_text(fake.config(wire_api, extra=extra))


def exec_(workspace, *args, key="sk-test"):
    return run_scv("exec", *args, "-C", str(workspace), env=scv_env(FAKE_OPENAI_KEY=key), timeout=60)


def tool_outputs(request, wire_api):
    body = request.body
    if wire_api == "responses":
        return {i["call_id"]: json.loads(i["output"]) for i in body["input"] if i.get("type") == "function_call_output"}
    return {m["tool_call_id"]: json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"}


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_tool_call_round_trip(scv_home, fake, workspace, wire_api):
    configure(scv_home, fake, wire_api)
    (workspace / "notes.txt").write_text("the answer is 42\n")
    fake.enqueue(Reply(text="Let me look.", calls=[("call_a", "read", '{"path": "notes.txt"}')], usage=(100, 20)),
                 Reply(text="The notes say 42.", usage=(150, 10)))
    proc = exec_(workspace, "what do the notes say?", "--json")
    assert proc.returncode == 0, proc.stderr
    seen = events(proc)
    kinds = [e["type"] for e in seen]
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed"
    assert "assistant.delta" in kinds and "tool.started" in kinds
    done = seen[-1]
    assert done["reply"] == "The notes say 42."
    assert {k: done["usage"][k] for k in ("input_tokens", "output_tokens", "total_tokens", "turns")} == \
        {"input_tokens": 250, "output_tokens": 30, "total_tokens": 280, "turns": 2}
    completed = next(e for e in seen if e["type"] == "tool.completed")
    assert completed["ok"] and completed["result"]["content"] == "the answer is 42\n"
    first, second = fake.requests
    assert first.path.endswith("/responses" if wire_api == "responses" else "/chat/completions")
    assert first.body["stream"] is True
    offered = ([t["name"] for t in first.body["tools"]] if wire_api == "responses"
               else [t["function"]["name"] for t in first.body["tools"]])
    listed = json.loads(run_scv("tools", "--json", "-C", str(workspace)).stdout)["tools"]
    assert offered == [t["name"] for t in listed]
    assert tool_outputs(second, wire_api)["call_a"]["content"] == "the answer is 42\n"
    # The first stream's end was read after its last event, so the second request reused its connection.
    assert second.client_port == first.client_port


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_plain_output_is_the_reply(scv_home, fake, workspace, wire_api):
    configure(scv_home, fake, wire_api)
    fake.enqueue(Reply(text="hello there"))
    proc = exec_(workspace, "say hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello there\n"


def test_bad_arguments_and_unknown_tools_go_back_to_the_model(scv_home, fake, workspace):
    configure(scv_home, fake)
    fake.enqueue(Reply(calls=[("c1", "read", '{"path": '), ("c2", "teleport", "{}"), ("c3", "read", '{"pth": "x"}')]),
                 Reply(text="sorry"))
    proc = exec_(workspace, "go")
    assert proc.returncode == 0, proc.stderr
    outputs = tool_outputs(fake.requests[1], "responses")
    assert not outputs["c1"]["ok"] and "not valid JSON" in outputs["c1"]["error"]
    assert "unknown tool 'teleport'" in outputs["c2"]["error"]
    assert "no argument 'pth'" in outputs["c3"]["error"]


def test_api_key_and_headers_from_the_profile(scv_home, fake, workspace):
    (scv_home / "config.toml").write_text(
        f'[provider]\nactive = "lit"\n[providers.lit]\nwire_api = "chat"\nmodel = "fake-model"\n'
        f'base_url = "{fake.base_url}/"\napi_key = "sk-test"\nheaders = {{ X-Team = "qa" }}\n')
    fake.enqueue(Reply(text="ok"))
    proc = run_scv("exec", "hi", "-C", str(workspace))
    assert proc.returncode == 0, proc.stderr
    request = fake.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test" and request.headers["X-Team"] == "qa"


def test_model_override(scv_home, fake, workspace):
    configure(scv_home, fake)
    fake.enqueue(Reply(text="ok"))
    proc = exec_(workspace, "hi", "--model", "other-model")
    assert proc.returncode == 0, proc.stderr
    assert fake.requests[0].body["model"] == "other-model"


def test_unknown_model_names_provider(scv_home, fake, workspace):
    configure(scv_home, fake)
    proc = exec_(workspace, "hi", "--model", "no-such-model")
    assert proc.returncode == 1
    assert "provider fake does not know the model 'no-such-model'" in proc.stderr
    assert len(fake.requests) == 1


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_rejected_key_names_provider(scv_home, fake, workspace, wire_api):
    configure(scv_home, fake, wire_api)
    proc = exec_(workspace, "hi", "--json", key="sk-wrong")
    assert proc.returncode == 1
    assert "provider fake refused the credentials (HTTP 401" in proc.stderr
    assert "api_key_env" in proc.stderr
    failed = events(proc)[-1]
    assert failed["type"] == "turn.failed" and failed["reason"] == "provider"
    assert len(fake.requests) == 1      # never retried


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_429_retry_after_is_honoured(scv_home, fake, workspace, wire_api):
    configure(scv_home, fake, wire_api)
    fake.enqueue(Status(429, retry_after="1", message="slow down"), Reply(text="made it"))
    proc = exec_(workspace, "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "made it\n"
    first, second = fake.requests
    assert second.at - first.at >= 0.9


def test_500_is_retried_a_bounded_number_of_times(scv_home, fake, workspace):
    configure(scv_home, fake)
    fake.enqueue(Status(500, retry_after="0"), Status(507, retry_after="0"), Reply(text="third try"))
    assert exec_(workspace, "hi").stdout == "third try\n"
    assert len(fake.requests) == 3
    fake.requests.clear()
    fake.enqueue(*[Status(503, retry_after="0", message="overloaded")] * 6)
    proc = exec_(workspace, "hi")
    assert proc.returncode == 1
    assert "provider fake answered HTTP 503: overloaded after 4 attempts" in proc.stderr
    assert len(fake.requests) == 4


def test_retry_after_beyond_the_ceiling_ends_the_turn(scv_home, fake, workspace):
    configure(scv_home, fake)
    fake.enqueue(Status(429, retry_after="3600"))
    proc = exec_(workspace, "hi")
    assert proc.returncode == 1
    assert "asked to wait 3600 s" in proc.stderr and len(fake.requests) == 1


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
def test_dropped_stream_ends_the_turn(scv_home, fake, workspace, wire_api):
    configure(scv_home, fake, wire_api)
    fake.enqueue(Cut())
    proc = exec_(workspace, "hi", "--json")
    assert proc.returncode == 1
    assert "provider fake's stream ended before the reply was complete" in proc.stderr
    assert events(proc)[-1]["type"] == "turn.failed"


@pytest.mark.parametrize("wire_api, event", [
    ("chat", '{"choices": [{"index": 0, "delta": ["not", "an", "object"]}]}'),
    ("chat", '{"choices": [], "usage": {"prompt_tokens": "many"}}'),
    ("responses", '{"type": "response.output_item.done", "item": "not an object"}'),
    ("responses", '{"type": "response.completed", "response": {"usage": {"input_tokens": [1]}}}'),
])
def test_a_malformed_stream_event_ends_the_turn_naming_the_provider(scv_home, fake, workspace, wire_api, event):
    configure(scv_home, fake, wire_api)
    fake.enqueue(Raw([f"data: {event}\n\n"]))
    proc = exec_(workspace, "hi", "--json")
    assert proc.returncode == 1
    assert "provider fake sent an event SCV cannot read" in proc.stderr and "Traceback" not in proc.stderr
    failed = events(proc)[-1]
    assert failed["type"] == "turn.failed" and failed["reason"] == "provider"


def test_configuration_errors_exit_2(scv_home, fake, workspace):
    (scv_home / "config.toml").write_text('[provider]\nactive = "missing"\n')
    proc = exec_(workspace, "hi")
    assert proc.returncode == 2 and "no [providers.missing] table" in proc.stderr
    configure(scv_home, fake)
    proc = run_scv("exec", "hi", "-C", str(workspace))     # FAKE_OPENAI_KEY not set
    assert proc.returncode == 2 and "FAKE_OPENAI_KEY, which is not set" in proc.stderr
    (scv_home / "config.toml").write_text("")
    proc = exec_(workspace, "hi")
    assert proc.returncode == 2 and "no model provider is configured" in proc.stderr
    assert not fake.requests


def test_turn_limit_stops_a_looping_model(scv_home, fake, workspace):
    configure(scv_home, fake, extra="\n[agent]\nmax_turns = 3\n")
    (workspace / "a.txt").write_text("a")
    fake.enqueue(*[Reply(calls=[(f"c{i}", "read", '{"path": "a.txt"}')]) for i in range(5)])
    proc = exec_(workspace, "loop", "--json")
    assert proc.returncode == 1
    assert "agent.max_turns" in proc.stderr
    assert events(proc)[-1]["reason"] == "turn_limit"
    assert len(fake.requests) == 3


def test_system_prompt_from_config(scv_home, fake, workspace):
    configure(scv_home, fake, "chat", extra='\n[agent]\nsystem_prompt = "You are a careful test agent."\n')
    fake.enqueue(Reply(text="ok"))
    assert exec_(workspace, "hi").returncode == 0
    system = fake.requests[0].body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You are a careful test agent.")


def test_hosted_web_search_is_offered_and_sources_appended(scv_home, fake, workspace):
    configure(scv_home, fake, extra='\n[web]\nsearch = "provider"\n')
    fake.enqueue(Reply(text="Tokio 1.40 is out.", annotations=[
        {"type": "url_citation", "url": "https://tokio.rs/blog", "title": "Tokio blog", "start_index": 0,
         "end_index": 5}]))
    proc = exec_(workspace, "latest tokio?")
    assert proc.returncode == 0, proc.stderr
    assert {"type": "web_search"} in fake.requests[0].body["tools"]
    assert proc.stdout == "Tokio 1.40 is out.\n\nSources:\n- Tokio blog: https://tokio.rs/blog\n"


def test_no_hosted_search_without_the_setting(scv_home, fake, workspace):
    configure(scv_home, fake)
    fake.enqueue(Reply(text="ok"))
    assert exec_(workspace, "hi").returncode == 0
    assert all(t.get("type") == "function" for t in fake.requests[0].body["tools"])


def test_unreachable_endpoint_is_retried_then_named(scv_home, workspace):
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (scv_home / "config.toml").write_text(f'[provider]\nactive = "local"\n[providers.local]\nmodel = "m"\n'
                                          f'base_url = "http://127.0.0.1:{port}/v1"\n')
    proc = exec_(workspace, "hi")
    assert proc.returncode == 1
    assert f"provider local could not be reached at http://127.0.0.1:{port}/v1/responses" in proc.stderr
    assert "after 4 attempts" in proc.stderr
