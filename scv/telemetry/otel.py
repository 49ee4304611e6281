"""The OpenTelemetry side of the seam in spans.py: the only module that imports OpenTelemetry,
and only when tracing is on.

Spans go through a bounded batch (OTEL_BSP_* size it) to OTLP over HTTP:
protobuf by the SDK's exporter, or JSON, which SCV encodes itself (the SDK's protobuf message
written in OTLP's JSON mapping, ids as hex) and posts through the same exporter's client, so one
pinned package serves both. At the end of the run the flush waits at most FLUSH_MS; what it
could not deliver is dropped with one `scv: telemetry:` line, and the exporter's own logging is
silenced, so a slow or absent collector never holds up or clutters a one-shot run.
"""

import base64
import json
import logging
import os
import sys
import threading
import time
from collections import deque
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace as api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from scv import __version__
from scv.core.traceparent import TraceContext
from scv.telemetry.settings import TraceSettings
from scv.telemetry.spans import Attributes, Run, Span

FLUSH_MS = 200          # the default bound on the flush at exit; SCV_TELEMETRY_FLUSH_MS sets another


def _clean(attributes: Attributes | None) -> dict[str, Any]:
    return {} if not attributes else {key: value for key, value in attributes.items() if value is not None}


class OtelSpan(Span):
    __slots__ = ("_span", "_tracer")
    recording = True

    def __init__(self, span: api.Span, tracer: api.Tracer):
        self._span = span
        self._tracer = tracer

    def child(self, name: str, attributes: Attributes | None = None, *, client: bool = False,
              server: bool = False, links: Sequence[TraceContext] = ()) -> Span:
        kind = api.SpanKind.CLIENT if client else api.SpanKind.SERVER if server else api.SpanKind.INTERNAL
        span = self._tracer.start_span(name, context=api.set_span_in_context(self._span), kind=kind,
                                       attributes=_clean(attributes),
                                       links=[api.Link(_remote_span(link).get_span_context()) for link in links])
        return OtelSpan(span, self._tracer)

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(_clean(attributes))

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        self._span.add_event(name, _clean(attributes))

    def end(self, error: str | None = None) -> None:
        if error:
            self._span.set_status(api.Status(api.StatusCode.ERROR, error[:300]))
        self._span.end()

    @property
    def context(self) -> TraceContext | None:
        own = self._span.get_span_context()
        if not own.is_valid:        # the span of a run that has none of its own (see start)
            return None
        return TraceContext(format(own.trace_id, "032x"), format(own.span_id, "016x"), int(own.trace_flags),
                            own.trace_state.to_header())

    def remote(self, context: TraceContext | None) -> Span:
        return self if context is None else OtelSpan(_remote_span(context), self._tracer)


# --- OTLP JSON ----------------------------------------------------------------------------------

_IDS = ("traceId", "spanId", "parentSpanId")


def json_payload(spans: Sequence[ReadableSpan]) -> bytes:
    """An OTLP/JSON export request: protobuf's JSON mapping, but with enums as numbers and the
    trace and span ids as hex strings, as the OTLP specification asks."""
    message = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in message.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                for item in (span, *span.get("links", ())):
                    for key in _IDS:
                        if item.get(key):
                            item[key] = base64.b64decode(item[key]).hex()
    return json.dumps(message, separators=(",", ":")).encode()


class JsonExporter(OTLPSpanExporter):
    """OTLP/HTTP with JSON bodies: the protobuf exporter's client (retries, headers, compression,
    timeout from the OTEL_* variables) with SCV's own encoding."""

    def __init__(self, endpoint: str):
        super().__init__(endpoint=endpoint, headers={"Content-Type": "application/json"})

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            data = json_payload(spans)
        except Exception:        # a span that cannot be encoded is lost, never the run
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if self._client.export(data).success else SpanExportResult.FAILURE


# --- the bounded batch --------------------------------------------------------------------------

def _env_number(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


class BoundedBatch(SpanProcessor):
    """Ended spans wait in a bounded queue (OTEL_BSP_MAX_QUEUE_SIZE; past it a span is dropped)
    for one daemon thread that sends them in batches (OTEL_BSP_MAX_EXPORT_BATCH_SIZE) every
    OTEL_BSP_SCHEDULE_DELAY milliseconds or when a batch is full. It counts what ended and what
    the collector took, so the run can say how many it dropped."""

    def __init__(self, exporter: SpanExporter):
        self._exporter = exporter
        self._limit = _env_number("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
        self._batch = min(_env_number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), self._limit)
        self._delay = _env_number("OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000
        self._queue: deque[ReadableSpan] = deque()
        self._lock = threading.Lock()
        self._drained = threading.Condition(self._lock)     # the queue is empty and no export runs
        self._sending = False
        self._wake = threading.Event()
        self._closing = False
        self.ended = 0
        self.sent = 0
        self._thread = threading.Thread(target=self._send_batches, name="scv-telemetry", daemon=True)
        self._thread.start()

    def on_start(self, span, parent_context=None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if not span.context.trace_flags.sampled:
            return
        with self._lock:
            self.ended += 1
            if len(self._queue) < self._limit:
                self._queue.append(span)
            full = len(self._queue) >= self._batch
        if full:
            self._wake.set()

    def _send_batches(self) -> None:
        while True:
            self._wake.wait(self._delay)
            self._wake.clear()
            closing = self._closing
            while True:
                with self._lock:
                    batch = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
                    self._sending = bool(batch)
                    if not batch:
                        self._drained.notify_all()
                        break
                try:
                    delivered = self._exporter.export(batch) is SpanExportResult.SUCCESS
                except Exception:        # an exporter's bug loses these spans, never the run
                    delivered = False
                if delivered:
                    with self._lock:
                        self.sent += len(batch)
            if closing:
                return

    def flush(self, seconds: float) -> bool:
        """Sends what is queued now, waiting at most `seconds`; False when some is still queued
        or on its way (it stays queued)."""
        deadline = time.monotonic() + seconds
        with self._drained:
            self._wake.set()
            while self._queue or self._sending:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._drained.wait(left)
        return True

    def close(self, seconds: float) -> int:
        """Sends what is queued, waiting at most `seconds`; the number of spans not delivered."""
        self._closing = True
        self._wake.set()
        self._thread.join(seconds)
        self._exporter.shutdown()       # a retry still waiting gives up; the thread is abandoned
        with self._lock:
            return self.ended - self.sent

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class OtelRun(Run):
    def __init__(self, settings: TraceSettings, batch: BoundedBatch, span: OtelSpan):
        self.settings = settings
        self.span = span
        self._batch = batch

    def flush(self) -> None:
        self._batch.flush(_flush_seconds())

    def finish(self, error: str | None = None) -> None:
        self.span.end(error)
        lost = self._batch.close(_flush_seconds())
        if lost > 0:
            print(f"scv: telemetry: {lost} of {self._batch.ended} spans were dropped: the collector at "
                  f"{_shown(self.settings.endpoint)} did not take them in time", file=sys.stderr, flush=True)


def _flush_seconds() -> float:
    return _env_number("SCV_TELEMETRY_FLUSH_MS", FLUSH_MS) / 1000


def _shown(url: str) -> str:
    """The endpoint without credentials or query, for the one line."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _silence() -> None:
    """The exporter logs each failure and retry; a run says it once, in its own words."""
    logger = logging.getLogger("opentelemetry")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


def _remote_span(parent: TraceContext) -> api.Span:
    remote = api.SpanContext(trace_id=int(parent.trace_id, 16), span_id=int(parent.span_id, 16), is_remote=True,
                             trace_flags=api.TraceFlags(parent.flags),
                             trace_state=api.TraceState.from_header([parent.state]) if parent.state else None)
    return api.NonRecordingSpan(remote)


def _incoming(parent: TraceContext | None) -> Context:
    return Context() if parent is None else api.set_span_in_context(_remote_span(parent), Context())


def start(settings: TraceSettings, name: str | None, attributes: Mapping[str, Any],
          parent: TraceContext | None) -> Run:
    """The run `name`, a child of `parent`; with no name the run has no span of its own (its
    span records nothing, and its remote() is each piece of work's parent)."""
    _silence()
    exporter = (JsonExporter(settings.endpoint) if settings.protocol == "http/json"
                else OTLPSpanExporter(endpoint=settings.endpoint))
    batch = BoundedBatch(exporter)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.service}), shutdown_on_exit=False)
    provider.add_span_processor(batch)
    tracer = provider.get_tracer("scv", __version__)
    if name is None:
        return OtelRun(settings, batch, OtelSpan(api.INVALID_SPAN, tracer))
    span = tracer.start_span(name, context=_incoming(parent), kind=api.SpanKind.SERVER if parent else
                             api.SpanKind.INTERNAL, attributes=_clean(attributes))
    return OtelRun(settings, batch, OtelSpan(span, tracer))
