"""The seam between SCV and OpenTelemetry: spans that open children, and the run that owns them.

A span is passed down explicitly (the run to the session, the session to its turns, a turn to
each tool call and its launch), never looked up in a context variable: turns run in their own
threads and background jobs in others. With tracing off every span is NO_SPAN, whose methods do
nothing and whose children are itself. scv/telemetry/otel.py is the real implementation, and
scv/telemetry/start.py chooses between them.
"""

from typing import Any, ClassVar, Mapping, Sequence

from scv.core.traceparent import TraceContext

Attributes = Mapping[str, Any]


class Span:
    """A span of the run's trace; this base class is the span of a run that is not traced."""

    __slots__ = ()
    recording: ClassVar[bool] = False

    def child(self, name: str, attributes: Attributes | None = None, *, client: bool = False,
              server: bool = False, links: Sequence[TraceContext] = ()) -> "Span":
        """A new span under this one (`client`: a request to another service, such as a model;
        `server`: the handling of a request another process sent, such as an MCP host's call).
        `links`: other spans it relates to without descending from them (an MCP call whose parent
        is the host's span links the connection it arrived on)."""
        return self

    def set(self, attributes: Attributes) -> None:
        """Adds attributes; a None value is left out."""

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        """Records a point in time on this span."""

    def end(self, error: str | None = None) -> None:
        """Ends the span; `error` marks it failed with that description."""

    @property
    def context(self) -> TraceContext | None:
        """What a process started under this span gets as its TRACEPARENT (None: not traced)."""
        return None

    def remote(self, context: TraceContext | None) -> "Span":
        """Another process's span (`context`, say from a request's `_meta`) as a parent in this
        span's trace; this span itself when there is none."""
        return self


NO_SPAN = Span()


class Run:
    """This process's part of the trace: its root span, and the bounded flush when it ends. This
    base class is a run that is not traced."""

    span: Span = NO_SPAN
    notice: str | None = None       # the line printed when the variables asked for traces SCV cannot send

    def flush(self) -> None:
        """Sends the spans that ended so far, waiting at most the bound of the flush at exit; what
        is not sent by then stays queued. For a process that serves work for others (a Ray
        task's runner), whose exit may never come in an orderly way."""

    def finish(self, error: str | None = None) -> None:
        """Ends the run's span and sends what is left, waiting at most 200 ms (SCV_TELEMETRY_FLUSH_MS)."""
