"""A fake OpenAI-compatible endpoint on 127.0.0.1 for provider tests, speaking both wire APIs.

Tests queue what the next requests get: `Reply` (streamed text and tool calls, usage,
annotations), `Status` (an HTTP error, optionally with Retry-After), `Cut` (a stream that breaks
in the middle of a chunk), `Stall` (a stream that sends nothing for a while) or `Raw` (these SSE
events as they are, for malformed streams). Every request is
recorded with its path, headers, JSON body and arrival time. The server checks the bearer key
and the model name first, as a real endpoint would.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback_http import serve_posts


@dataclass
class Reply:
    text: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)     # (call id, tool name, arguments JSON)
    usage: tuple[int, int] = (10, 5)
    cached: int = 0         # of the input tokens, those read from the prompt cache (reported when set)
    annotations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Status:
    code: int
    retry_after: str | None = None
    message: str = "fake failure"
    code_name: str = ""


@dataclass
class Cut:
    text: str = "partial"


@dataclass
class Stall:
    seconds: float


@dataclass
class Raw:
    events: list[str]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    client_port: int = 0        # which connection it came on


class FakeOpenAI:
    def __init__(self, api_key: str | None = "sk-test", models: tuple[str, ...] = ("fake-model", "other-model")):
        self.api_key = api_key
        self.models = set(models)
        self.queue: list[Any] = []
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.server, self.thread = serve_posts(self._handle)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def enqueue(self, *behaviours: Any) -> None:
        with self.lock:
            self.queue.extend(behaviours)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def config(self, wire_api: str = "responses", name: str = "fake", extra: str = "") -> str:
        return (f'[provider]\nactive = "{name}"\n\n[providers.{name}]\nkind = "openai"\nwire_api = "{wire_api}"\n'
                f'model = "fake-model"\nbase_url = "{self.base_url}"\napi_key_env = "FAKE_OPENAI_KEY"\n'
                f'timeout = 30\n{extra}')

    # --- serving -----------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length)
        body = json.loads(raw or b"{}")
        with self.lock:
            self.requests.append(Recorded(h.path, dict(h.headers), body, time.monotonic(), h.client_address[1]))
        if self.api_key and h.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._json(h, 401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
        if body.get("model") not in self.models:
            return self._json(h, 404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                                 "code": "model_not_found"}})
        with self.lock:
            behaviour = self.queue.pop(0) if self.queue else Status(500, message="the fake has nothing queued")
        chat = h.path.endswith("/chat/completions")
        match behaviour:
            case Status(code=code, retry_after=retry_after, message=message, code_name=code_name):
                headers = {"Retry-After": retry_after} if retry_after is not None else {}
                self._json(h, code, {"error": {"message": message, "code": code_name or None}}, headers)
            case Reply() as reply:
                self._stream(h, self._chat_events(reply) if chat else self._responses_events(reply))
            case Cut(text=text):
                events = self._chat_events(Reply(text=text)) if chat else self._responses_events(Reply(text=text))
                self._stream(h, events[:2], cut=True)
            case Stall(seconds=seconds):
                self._stream(h, [], stall=seconds)
            case Raw(events=events):
                self._stream(h, events)

    def _json(self, h, code: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.end_headers()
        h.wfile.write(data)

    def _stream(self, h, events: list[str], cut: bool = False, stall: float = 0.0) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def chunk(data: bytes) -> None:
            h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            h.wfile.flush()

        try:
            for event in events:
                chunk(event.encode())
            if stall:
                time.sleep(stall)
            if cut:
                # A chunk announced longer than what follows, then the connection closes.
                h.wfile.write(b"400\r\ndata: {\"type\": \"response.output_te")
                h.wfile.flush()
                h.close_connection = True
                return
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True

    @staticmethod
    def _responses_events(reply: Reply) -> list[str]:
        def sse(data: dict) -> str:
            return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

        out = [sse({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})]
        items = []
        if reply.text:
            half = len(reply.text) // 2
            for piece in (reply.text[:half], reply.text[half:]):
                if piece:
                    out.append(sse({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                                    "content_index": 0, "delta": piece}))
            item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": reply.annotations}]}
            out.append(sse({"type": "response.output_item.done", "output_index": 0, "item": item}))
            items.append(item)
        for index, (call_id, name, arguments) in enumerate(reply.calls, start=len(items)):
            item = {"type": "function_call", "id": f"fc_{index}", "call_id": call_id, "name": name,
                    "arguments": arguments, "status": "completed"}
            out.append(sse({"type": "response.output_item.added", "output_index": index,
                            "item": {**item, "arguments": ""}}))
            out.append(sse({"type": "response.function_call_arguments.delta", "output_index": index,
                            "item_id": f"fc_{index}", "delta": arguments}))
            out.append(sse({"type": "response.output_item.done", "output_index": index, "item": item}))
            items.append(item)
        inp, outp = reply.usage
        usage = {"input_tokens": inp, "output_tokens": outp, "total_tokens": inp + outp}
        if reply.cached:
            usage["input_tokens_details"] = {"cached_tokens": reply.cached}
        out.append(sse({"type": "response.completed", "response": {
            "id": "resp_1", "status": "completed", "output": items, "usage": usage}}))
        return out

    @staticmethod
    def _chat_events(reply: Reply) -> list[str]:
        def sse(data: dict) -> str:
            return f"data: {json.dumps(data)}\n\n"

        def chunk(delta: dict, finish: str | None = None) -> str:
            return sse({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        out = [chunk({"role": "assistant", "content": ""})]
        half = len(reply.text) // 2
        for piece in (reply.text[:half], reply.text[half:]):
            if piece:
                out.append(chunk({"content": piece}))
        for index, (call_id, name, arguments) in enumerate(reply.calls):
            out.append(chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
            third = max(1, len(arguments) // 3)
            for start in range(0, len(arguments), third):
                out.append(chunk({"tool_calls": [{"index": index,
                                                  "function": {"arguments": arguments[start:start + third]}}]}))
        out.append(chunk({}, "tool_calls" if reply.calls else "stop"))
        inp, outp = reply.usage
        usage = {"prompt_tokens": inp, "completion_tokens": outp, "total_tokens": inp + outp}
        if reply.cached:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached}
        out.append(sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
        out.append("data: [DONE]\n\n")
        return out
