"""Provider pieces without a network: SSE decoding, Retry-After, the retry policy, the wire
bodies built from a conversation, and the script provider's references."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scv.core.cancellation import Cancellation
from scv.core.errors import UsageError
from scv.providers import openai_chat, openai_responses
from scv.providers.base import AssistantMessage, ModelRequest, ProviderError, ToolCall, ToolOutput, UserMessage
from scv.providers.retry import RetryPolicy, parse_retry_after
from scv.providers.script import ScriptProvider
from scv.providers.sse import SSEDecoder, SSEError, SSEEvent


def test_sse_events_comments_and_line_endings():
    decoder = SSEDecoder()
    stream = b": keep-alive\r\nevent: response.created\r\ndata: {\"a\":\r\ndata:  1}\r\n\r\ndata: [DONE]\n\n"
    assert decoder.feed(stream) == [SSEEvent("response.created", '{"a":\n 1}'), SSEEvent("message", "[DONE]")]


def test_sse_cr_split_across_chunks_is_one_line_end():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r\n") == [SSEEvent("message", "x")]


def test_sse_unterminated_event_is_dropped_and_oversize_refused():
    decoder = SSEDecoder()
    decoder.feed(b"data: half")
    assert decoder.close() == []
    with pytest.raises(SSEError):
        SSEDecoder(max_event_bytes=64).feed(b"data: " + b"x" * 100)


@given(st.lists(st.text(alphabet="ab{}\"", max_size=12), min_size=1, max_size=5), st.integers(1, 7))
def test_sse_any_chunking_gives_the_same_events(datas, size):
    stream = "".join(f"data: {d}\r\n\r\n" for d in datas).encode()
    decoder = SSEDecoder()
    events = []
    for start in range(0, len(stream), size):
        events.extend(decoder.feed(stream[start:start + size]))
    assert [e.data for e in events] == datas


def test_retry_after_forms():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("Wed, 02 Dec 2026 14:00:10 GMT", now=1796220000.0) == pytest.approx(10.0)
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None and parse_retry_after("nan") is None


def test_retry_policy_is_bounded():
    policy = RetryPolicy(attempts=3, base_seconds=0.5, cap_seconds=0.8, max_retry_after=5)
    assert [policy.delay(n, None) for n in (1, 2, 3)] == [0.5, 0.8, None]
    assert policy.delay(1, 2.0) == 2.0
    assert policy.delay(1, 6.0) is None


CONVERSATION = (UserMessage(text="hi"),
                AssistantMessage(text="looking", tool_calls=(ToolCall(id="c1", name="read", arguments='{"path":"a"}'),)),
                ToolOutput(call_id="c1", output='{"ok":true}'),
                AssistantMessage(text="done"))
REQUEST = ModelRequest(system_prompt="sys", history=CONVERSATION,
                       tools=({"name": "read", "description": "Read.", "schema": {"type": "object"}},),
                       hosted_tools=({"type": "web_search"},))


def test_responses_body():
    body = openai_responses.request_body(REQUEST, "m")
    assert body["instructions"] == "sys" and body["model"] == "m" and body["store"] is False
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == ["user", "message", "function_call", "function_call_output", "message"]
    assert body["input"][2] == {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"path":"a"}'}
    assert body["tools"][0]["parameters"] == {"type": "object"} and body["tools"][-1] == {"type": "web_search"}


def test_chat_body_has_no_hosted_tools():
    body = openai_chat.request_body(REQUEST, "m")
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert body["messages"][2]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path":"a"}'}
    assert [t["type"] for t in body["tools"]] == ["function"]
    assert body["stream_options"] == {"include_usage": True}


def test_responses_failure_events_name_the_provider():
    builder = openai_responses.ReplyBuilder("acme", lambda text: None)
    with pytest.raises(ProviderError, match="provider acme failed the reply: quota"):
        builder.handle("response.failed", {"response": {"error": {"message": "quota"}}})


def test_script_references_and_exhaustion(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"calls": [{"id": "a", "tool": "read", "args": {"path": "{{run.utc}}.txt"}},
                                          {"tool": "bash", "args": "{\"command\": "}]}) + "\n"
                    + json.dumps({"text": "{{a.content}}|{{a.size}}|{{a.ok}}"}) + "\n")
    provider = ScriptProvider(path)
    request = ModelRequest(system_prompt="", history=(), tools=())
    first = provider.complete(request, on_text=lambda t: None, cancel=Cancellation())
    assert first.tool_calls[0].id == "a" and json.loads(first.tool_calls[0].arguments)["path"].endswith("Z.txt")
    assert first.tool_calls[1].arguments == '{"command": '     # raw text passes through unchanged
    history = (ToolOutput(call_id="a", output='{"ok": false, "error": "no such file", "content": "x"}'),)
    second = provider.complete(ModelRequest(system_prompt="", history=history, tools=()), on_text=lambda t: None,
                               cancel=Cancellation())
    assert second.text == "x|(no size: no such file)|false"
    with pytest.raises(ProviderError, match="no more model turns"):
        provider.complete(request, on_text=lambda t: None, cancel=Cancellation())


def test_script_ids_must_be_unique(tmp_path):
    path = tmp_path / "s.jsonl"
    call = {"id": "x", "tool": "read", "args": {}}
    path.write_text(json.dumps({"calls": [call, call]}) + "\n{\"text\": \"end\"}\n")
    with pytest.raises(UsageError, match="used twice"):
        ScriptProvider(path)


def test_anthropic_history_alternates_and_marks_failed_results():
    from scv.providers import anthropic
    calls = (ToolCall("t1", "read", '{"path": "a"}'), ToolCall("t2", "bash", "not json"))
    history = (UserMessage("go"), AssistantMessage("", calls), ToolOutput("t1", '{"ok": true}'),
               ToolOutput("t2", '{"ok": false, "error": "x"}'), UserMessage("and then?"))
    body = anthropic.request_body(ModelRequest(system_prompt="sys", history=history, tools=()), "m", 99)
    assert body["system"] == "sys" and body["max_tokens"] == 99 and "tools" not in body
    user, assistant, results = body["messages"]
    assert [b["input"] for b in assistant["content"]] == [{"path": "a"}, {"unparsed_arguments": "not json"}]
    assert [b.get("is_error", False) for b in results["content"][:2]] == [False, True]
    assert results["content"][2] == {"type": "text", "text": "and then?"}


def test_anthropic_profile_defaults_to_the_public_endpoint(monkeypatch):
    from scv.config.load import Config, ProviderProfile, ProviderSelect
    from scv.providers.factory import build_provider
    monkeypatch.setenv("ANT_KEY", "k")
    config = Config(provider=ProviderSelect(active="a"),
                    providers={"a": ProviderProfile(kind="anthropic", model="m", api_key_env="ANT_KEY")})
    provider = build_provider(config)
    assert provider.client.url == "https://api.anthropic.com/v1/messages"
    assert provider.client.headers["x-api-key"] == "k" and "Authorization" not in provider.client.headers


def test_a_plain_http_proxy_from_the_environment_gets_the_absolute_url(monkeypatch):
    from scv.providers.connection import Connection
    from tests.loopback_http import serve_posts
    seen = []

    def answer(h):
        seen.append((h.path, json.loads(h.rfile.read(int(h.headers["Content-Length"])))))
        h.send_response(200)
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"ok")

    proxy, _ = serve_posts(answer)
    try:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        response = Connection("http://model.invalid:8080/v1/responses", 10, 10).post({"a": 1}, {})
        assert response.status == 200 and response.read() == b"ok"
        assert seen == [("http://model.invalid:8080/v1/responses", {"a": 1})]
    finally:
        proxy.shutdown()
        proxy.server_close()
