"""The start of a run's trace: the OTEL_* variables decide (settings.py); OpenTelemetry is imported
only when they turn tracing on, and a missing extra costs one line, never the run."""

import os
import sys
from typing import Mapping

from scv.core.traceparent import from_environ
from scv.telemetry.settings import decide
from scv.telemetry.spans import Attributes, Run

MISSING_EXTRA = ("scv: telemetry: the OTEL_* variables ask for traces, but OpenTelemetry is not installed; install "
                 "it with pip install 'scv[otel]'; this run is not traced")


def start_run(name: str | None, attributes: Attributes | None = None,
              environ: Mapping[str, str] = os.environ) -> Run:
    """The run `name` (such as "scv exec"), traced when the OTEL_* variables say so and a child of
    the incoming TRACEPARENT. Call it after the Supervisor exists: tracing starts a thread.

    With `name` None the process has no span of its own: it serves work that belongs to other
    traces (a Ray task's runner), and each piece's spans go under `run.span.remote(context)`."""
    settings, notice = decide(environ)
    if settings is None:
        return _untraced(notice)
    try:
        from scv.telemetry import otel
    except ImportError:
        return _untraced(MISSING_EXTRA)
    return otel.start(settings, name, attributes or {}, None if name is None else from_environ(environ))


def _untraced(notice: str | None) -> Run:
    """An untraced run; `notice` (why the variables' ask is not met) is printed, and kept on it."""
    run = Run()
    if notice is not None:
        print(notice, file=sys.stderr, flush=True)
        run.notice = notice
    return run
