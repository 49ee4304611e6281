"""Whether this process traces, from the standard OpenTelemetry variables alone (stdlib only: the
decision costs nothing and imports nothing when tracing is off)."""

from typing import Mapping, NamedTuple

DEFAULT_ENDPOINT = "http://localhost:4318"
TRACES_PATH = "/v1/traces"
PROTOCOLS = ("http/protobuf", "http/json")
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})


class TraceSettings(NamedTuple):
    endpoint: str           # the full URL spans are posted to
    protocol: str           # one of PROTOCOLS
    service: str            # OTEL_SERVICE_NAME, else "scv"


def _value(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()


def decide(environ: Mapping[str, str]) -> tuple[TraceSettings | None, str | None]:
    """The settings when tracing is on (else None), and the one line to print when the variables
    ask for something SCV cannot do (then the run goes untraced)."""
    if _value(environ, "OTEL_SDK_DISABLED").lower() in TRUE_WORDS:
        return None, None
    exporters = {part.strip().lower() for part in _value(environ, "OTEL_TRACES_EXPORTER").split(",") if part.strip()}
    if "none" in exporters:
        return None, None
    traces_endpoint = _value(environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    endpoint = _value(environ, "OTEL_EXPORTER_OTLP_ENDPOINT")
    if not (traces_endpoint or endpoint or exporters):
        return None, None
    unsupported = sorted(exporters - {"otlp"})
    if unsupported:
        return None, (f"scv: telemetry: OTEL_TRACES_EXPORTER={','.join(unsupported)} is not supported (SCV exports "
                      "OTLP over HTTP only); set it to otlp; this run is not traced")
    protocol_variable = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" if _value(environ, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                         else "OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = _value(environ, protocol_variable).lower() or "http/protobuf"
    if protocol not in PROTOCOLS:
        return None, (f"scv: telemetry: {protocol_variable}={protocol} is not supported (SCV exports OTLP over HTTP "
                      "only); set it to http/protobuf or http/json; this run is not traced")
    if traces_endpoint:
        url = traces_endpoint
    else:
        url = (endpoint or DEFAULT_ENDPOINT).rstrip("/") + TRACES_PATH
    return TraceSettings(url, protocol, _value(environ, "OTEL_SERVICE_NAME") or "scv"), None


# What a process started elsewhere (a Ray task's runner on another node) needs to export its
# spans where this one does: the OTEL_* variables and SCV's own bound on the flush.
PASSED_ON_PREFIXES = ("OTEL_",)
PASSED_ON_NAMES = frozenset({"SCV_TELEMETRY_FLUSH_MS"})


def passed_on(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that make such a process export as this one does; {} when this one does
    not trace (then that process keeps its own environment's choice)."""
    settings, _ = decide(environ)
    if settings is None:
        return {}
    return {name: value for name, value in environ.items()
            if name.startswith(PASSED_ON_PREFIXES) or name in PASSED_ON_NAMES}
