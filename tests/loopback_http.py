"""A threaded HTTP server on 127.0.0.1 whose POSTs go to one function: the base of the fake
model endpoints (OpenAI-compatible, Anthropic)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def serve_posts(on_post: Callable[[BaseHTTPRequestHandler], None]) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Starts the server on a free port; every other method gets a 404."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            on_post(self)

        def do_GET(self):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread
