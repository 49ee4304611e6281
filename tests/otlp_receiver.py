"""An in-memory OTLP/HTTP trace receiver on 127.0.0.1: it decodes each export (protobuf, or OTLP
JSON turned back into the same protobuf message) with opentelemetry-proto's classes and keeps
the spans, or, as a collector that never answers, holds every request until the test ends.
Those classes (the scv[otel] extra) are imported when an export arrives, so a test that expects
none can use the receiver without the extra."""

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback_http import serve_posts


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str               # hex, as a traceparent writes it
    span_id: str
    parent_id: str              # "" for a root
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    service: str
    status_code: int
    kind: int = 0               # OTLP's SpanKind: 1 internal, 2 server, 3 client
    links: list[tuple[str, str]] = field(default_factory=list)     # (trace id, span id) of each link


@dataclass
class Export:
    content_type: str
    spans: list[ReceivedSpan] = field(default_factory=list)


def _values(attributes) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    found = {}
    for item in attributes:
        value = MessageToDict(item.value)
        found[item.key] = next(iter(value.values())) if value else None
    return found


def _hex_ids_to_base64(item: dict) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if item.get(key):
            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()


def decode(body: bytes, content_type: str) -> list[ReceivedSpan]:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    if content_type.startswith("application/json"):
        data = json.loads(body)
        for resource in data.get("resourceSpans", ()):
            for scope in resource.get("scopeSpans", ()):
                for span in scope.get("spans", ()):
                    for item in (span, *span.get("links", ())):
                        _hex_ids_to_base64(item)
        message = ParseDict(data, ExportTraceServiceRequest())
    else:
        message = ExportTraceServiceRequest.FromString(body)
    spans = []
    for resource in message.resource_spans:
        service = _values(resource.resource.attributes).get("service.name", "")
        for scope in resource.scope_spans:
            for span in scope.spans:
                spans.append(ReceivedSpan(
                    name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex(), attributes=_values(span.attributes),
                    events=[(event.name, _values(event.attributes)) for event in span.events],
                    service=service, status_code=span.status.code, kind=span.kind,
                    links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links]))
    return spans


class OtlpReceiver:
    def __init__(self, *, answer: bool = True):
        self.answer = answer
        self.exports: list[Export] = []
        self.raw: list[bytes] = []
        self._changed = threading.Condition()
        self._release = threading.Event()
        self.server, self.thread = serve_posts(self._on_post)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _on_post(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length", "0")))
        if not self.answer:
            self._release.wait()        # a collector that never answers while the test runs
            return
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
        content_type = handler.headers.get("Content-Type", "")
        export = Export(content_type, decode(body, content_type) if handler.path == "/v1/traces" else [])
        with self._changed:
            self.raw.append(body)
            self.exports.append(export)
            self._changed.notify_all()
        reply = ExportTraceServiceResponse().SerializeToString()
        handler.send_response(200 if handler.path == "/v1/traces" else 404)
        handler.send_header("Content-Type", content_type or "application/x-protobuf")
        handler.send_header("Content-Length", str(len(reply)))
        handler.end_headers()
        handler.wfile.write(reply)

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._changed:
            return [span for export in self.exports for span in export.spans]

    def wait_for(self, name: str, deadline_seconds: float = 30) -> list[ReceivedSpan]:
        """All spans once one named `name` has arrived (or the deadline passed)."""
        deadline = time.monotonic() + deadline_seconds
        with self._changed:
            while not any(span.name == name for export in self.exports for span in export.spans):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
        return self.spans

    def close(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()
