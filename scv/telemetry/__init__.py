"""Tracing: one OpenTelemetry trace for a whole run and every process it starts (docs/tracing.md).

Off unless the standard OTEL_* variables turn it on (settings.py). The rest of SCV sees only the
seam in spans.py: a run, and spans that open children; when tracing is off every span is the one
no-op span, so the hot path costs an attribute call. Only otel.py imports OpenTelemetry, and only
when tracing is on.
"""
