"""A fake Anthropic Messages endpoint on 127.0.0.1 for running the real Claude Code against:
every `POST /v1/messages` gets a streamed text reply (or a queued HTTP error), and every request
is recorded with its path, headers, JSON body and arrival time. With `api_key` set, a request
without that `x-api-key` gets the API's 401; a queued status may carry a Retry-After value.

With `tool_use` set to (prompt, name, input), the first request of the agent loop (it offers
tools) whose last message ends with that prompt is answered with that tool call, and a request
whose last message ends with a tool's result with a text naming the outcome. With `loop_tool` set
to (name, input), every request of the agent loop is answered with that tool call, without end
(each reply a message of its own id). With `hold` set, the streamed replies wait until it is set (or 60 s), so a turn is in
flight for as long as a test needs."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.loopback_http import serve_posts


class FakeAnthropic:
    def __init__(self, text: str = "Hello from the fake Anthropic endpoint."):
        self.text = text
        self.statuses: list[int | tuple[int, str]] = []     # queued HTTP errors (with a Retry-After) for the next requests
        self.api_key: str | None = None
        self.requests: list[dict] = []
        self.tool_use: tuple[str, str, dict] | None = None      # (prompt, tool name, input)
        self.loop_tool: tuple[str, dict] | None = None          # (tool name, input), every time
        self.cache_read = 0         # cache_read_input_tokens each streamed message reports (when set)
        self.hold: threading.Event | None = None
        self.lock = threading.Lock()
        self.server, _ = serve_posts(self._handle)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length") or 0)) or b"{}")
        with self.lock:
            self.requests.append({"path": h.path, "headers": dict(h.headers), "body": body, "at": time.monotonic()})
            status = self.statuses.pop(0) if self.statuses else None
        if self.api_key is not None and h.headers.get("x-api-key") != self.api_key:
            return self._json(h, 401, {"type": "error", "error": {"type": "authentication_error",
                                                                  "message": "invalid x-api-key"}})
        if "/v1/messages" not in h.path or "count_tokens" in h.path:
            return self._json(h, 200, {"input_tokens": 11})
        if status is not None:
            status, retry_after = status if isinstance(status, tuple) else (status, None)
            kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
            extra = {"retry-after": retry_after} if retry_after is not None else {}
            return self._json(h, status, {"type": "error", "error": {"type": kind, "message": "fake failure"}}, extra)
        if not body.get("stream"):
            return self._json(h, 200, {"id": "msg_fake", "type": "message", "role": "assistant",
                                       "model": body.get("model"), "content": [{"type": "text", "text": self.text}],
                                       "stop_reason": "end_turn", "usage": {"input_tokens": 11, "output_tokens": 5}})
        hold = self.hold
        if hold is not None:
            hold.wait(60)
        blocks = self._blocks(body)
        stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
        events = [("message_start", {"type": "message_start", "message": {
            "id": f"msg_fake_{len(self.requests)}", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [], "stop_reason": None,
            "usage": {"input_tokens": 11, "output_tokens": 1,
                      **({"cache_read_input_tokens": self.cache_read} if self.cache_read else {})}}})]
        for index, block in enumerate(blocks):
            if block["type"] == "tool_use":
                start = dict(block, input={})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                       ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                       ("content_block_stop", {"type": "content_block_stop", "index": index})]
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                      "usage": {"output_tokens": 5}}),
                   ("message_stop", {"type": "message_stop"})]
        data = "".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _blocks(self, body: dict) -> list[dict]:
        """The reply's content: the scripted tool call (once) for the request that ends with its
        prompt, else the text (after a tool call, the text says what its result was)."""
        # Claude Code -p ends the list with a system message of its environment: the turn is the
        # last message of the conversation proper.
        messages = [m for m in body.get("messages") or [] if m.get("role") != "system"]
        last = messages[-1].get("content") if messages else None
        parts = [part for part in last if isinstance(part, dict)] if isinstance(last, list) else []
        with self.lock:
            if self.loop_tool is not None and body.get("tools"):
                name, tool_input = self.loop_tool
                return [{"type": "tool_use", "id": f"toolu_loop_{len(self.requests)}", "name": name,
                         "input": tool_input}]
            scripted = self.tool_use
            if scripted is not None and parts and parts[-1].get("type") == "text" and \
                    parts[-1].get("text") == scripted[0] and body.get("tools"):
                self.tool_use = None
                _, name, tool_input = scripted
                return [{"type": "tool_use", "id": f"toolu_fake_{len(self.requests)}", "name": name,
                         "input": tool_input}]
        results = [part for part in parts if part.get("type") == "tool_result"]
        if parts and parts[-1].get("type") == "tool_result":
            outcome = "error" if results[-1].get("is_error") else "ok"
            return [{"type": "text", "text": f"tool result: {outcome}"}]
        return [{"type": "text", "text": self.text}]

    @staticmethod
    def _json(h, code: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        h.send_response(code)
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
