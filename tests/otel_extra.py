"""Whether the `scv[otel]` extra is installed, for the tests that need it: `needs_otel` skips a
test (with the reason) unless every module a traced run and the in-memory receiver import is
there.

Checked module by module, not by one package name: `opentelemetry-api` or `-sdk` can come in
with other packages while the exporter SCV uses does not, and then a traced run prints the
missing-extra line, so those tests would fail instead of testing tracing. The modules are read
from scv/telemetry/otel.py's own imports (so the list cannot fall behind) and looked up without
importing them, so collecting the tests does not load OpenTelemetry into the suite's process.
The tests of a run without OpenTelemetry (nothing imported, the missing-extra line) do not use
the mark and always run."""

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

import scv.telemetry

# The receiver's own need besides what otel.py imports: opentelemetry-proto's collector messages.
RECEIVER = ("opentelemetry.proto.collector.trace.v1.trace_service_pb2",)


def _third_party_imports(path: Path) -> list[str]:
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [name for name in names if name.split(".")[0] not in sys.stdlib_module_names | {"scv"}]


def _missing() -> str | None:
    otel = Path(scv.telemetry.__file__).with_name("otel.py")
    for name in (*_third_party_imports(otel), *RECEIVER):
        try:
            found = importlib.util.find_spec(name)
        except ImportError:         # a parent package is missing
            found = None
        if found is None:
            return f"needs the scv[otel] extra (pip install 'scv[otel]'): {name} is not installed"
    return None


MISSING = _missing()
needs_otel = pytest.mark.skipif(MISSING is not None, reason=MISSING or "not skipped")
