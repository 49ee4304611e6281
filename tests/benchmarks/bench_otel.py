"""Issue 25's tracing benchmark: a warm tool call through the turn loop's path (prepare, approve,
run, its span and its worker's TRACEPARENT) with tracing on, exporting to an in-memory OTLP
receiver on 127.0.0.1, against the same call with tracing off, in the same process (target at
most 1.05); then `scv exec` start-up with tracing off (no OTEL_* variables) against off by
OTEL_SDK_DISABLED, and on, as whole processes."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from scv.config.load import Config
from scv.core.cancellation import Cancellation
from scv.providers.base import ToolCall
from scv.providers.script import ScriptProvider
from scv.session import turn_loop
from scv.session.session import Session
from scv.session.turn_loop import Phase
from scv.supervision.supervisor import Supervisor
from scv.telemetry.settings import TraceSettings
from scv.telemetry.spans import NO_SPAN
from scv.tools.base import ToolContext
from scv.tools.registry import executor_modules
from tests.benchmarks.common import interleaved, line
from tests.otlp_receiver import OtlpReceiver

BATCH = 5
ROUNDS = 60
STARTS = 7


def _calls(session: Session, turn, cancel: Cancellation) -> None:
    for index in range(BATCH):
        session.phase = Phase.MODEL
        turn_loop._tool_call(session, "turn-1", ToolCall(id=f"c{index}", name="read", arguments='{"path": "f.txt"}'),
                             cancel, turn)


def _exec(script: Path, workspace: Path, env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "scv", "exec", "--script", str(script), "-C", str(workspace)],
                          env=env, capture_output=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr


def main() -> None:
    try:
        from scv.telemetry import otel
    except ImportError as err:
        line("skipped: needs the scv[otel] extra (pip install 'scv[otel]')", str(err))
        return
    receiver = OtlpReceiver()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "ws"
            ws.mkdir()
            (ws / "f.txt").write_text("x" * 2048)
            script = Path(tmp) / "none.jsonl"
            script.write_text('{"text": "done"}\n')
            with Supervisor(preload=executor_modules()) as sup:
                run = otel.start(TraceSettings(receiver.endpoint + "/v1/traces", "http/protobuf", "bench"),
                                 "scv bench", {}, None)
                ctx = ToolContext(workspace=ws, config=Config())
                off = Session(sup, ctx, ScriptProvider(script), emit=lambda name, params: None, auto_approve=True)
                on = Session(sup, ctx, ScriptProvider(script), emit=lambda name, params: None, auto_approve=True,
                             trace=run.span)
                turn = run.span.child("scv turn")
                cancel = Cancellation()
                for _ in range(5):
                    _calls(off, NO_SPAN, cancel)
                    _calls(on, turn, cancel)
                traced, plain = interleaved(lambda: _calls(on, turn, cancel), lambda: _calls(off, NO_SPAN, cancel),
                                            ROUNDS)
                turn.end()
                run.finish()
                cancel.close()
            line(f"warm read call, tracing off, {BATCH} back to back (median per call)", f"{plain / BATCH * 1e3:.3f} ms")
            line("the same call traced (its span, TRACEPARENT to the worker)", f"{traced / BATCH * 1e3:.3f} ms")
            line("ratio on/off (target <= 1.05)", f"{traced / plain:.3f}")
            received = len(receiver.spans)
            line("spans the receiver got (calls traced + run + turn)", str(received))

            base = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
            base["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
            disabled = dict(base, OTEL_SDK_DISABLED="true", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
            traced_env = dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
            _exec(script, ws, base)
            unset, off_disabled = interleaved(lambda: _exec(script, ws, base), lambda: _exec(script, ws, disabled),
                                              STARTS)
            unset_again, traced_start = interleaved(lambda: _exec(script, ws, base),
                                                    lambda: _exec(script, ws, traced_env), STARTS)
            line("scv exec --script, no OTEL_* variables (median wall)", f"{unset * 1e3:.0f} ms")
            line("  OTEL_SDK_DISABLED=true with an endpoint: ratio (target 1.00)", f"{off_disabled / unset:.2f}")
            line("  traced (OpenTelemetry loaded, flush at exit): ratio", f"{traced_start / unset_again:.2f}")
    finally:
        receiver.close()
