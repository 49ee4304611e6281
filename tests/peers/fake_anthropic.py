"""A fake Anthropic Messages endpoint on 127.0.0.1 for running the real Claude Code against:
every `POST /v1/messages` gets a streamed text reply (or a queued HTTP error), and every request
is recorded with its path and JSON body."""

import json
import threading
from http.server import BaseHTTPRequestHandler

from tests.loopback_http import serve_posts


class FakeAnthropic:
    def __init__(self, text: str = "Hello from the fake Anthropic endpoint."):
        self.text = text
        self.statuses: list[int] = []       # queued HTTP errors for the next requests
        self.requests: list[dict] = []
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
            self.requests.append({"path": h.path, "body": body})
            status = self.statuses.pop(0) if self.statuses else None
        if "/v1/messages" not in h.path or "count_tokens" in h.path:
            return self._json(h, 200, {"input_tokens": 11})
        if status is not None:
            kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
            return self._json(h, status, {"type": "error", "error": {"type": kind, "message": "fake failure"}})
        if not body.get("stream"):
            return self._json(h, 200, {"id": "msg_fake", "type": "message", "role": "assistant",
                                       "model": body.get("model"), "content": [{"type": "text", "text": self.text}],
                                       "stop_reason": "end_turn", "usage": {"input_tokens": 11, "output_tokens": 5}})
        events = [
            ("message_start", {"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"), "content": [],
                "stop_reason": None, "usage": {"input_tokens": 11, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": self.text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        data = "".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _json(h, code: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
