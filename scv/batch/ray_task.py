"""The Ray task that runs one batch task on a node: a generator that hands the task to `scv
batch --run-one` (the runner contract, scv/batch/run_one.py) and yields each line the runner
prints as it comes. The runner runs in a session of its own; each Ray worker keeps its runner
for the next task (a new interpreter per task would cost more than a short task itself), and a
cancelled or broken runner is replaced.

The runner's stdout is pumped with a selector at 0.2 s: Ray delivers a cancel as an exception
in this thread, which a blocking read would hold off until the child exits. Ray only says
"stop"; SCV's own teardown stops the tree (the runner's SIGTERM handling, then its death
signal), including `setsid` escapees, which survive both Ray's soft and force cancel."""

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

import ray

from scv.batch.run_one import PARENT_VARIABLE, ResultLine, decode_line
from scv.cluster import WORKSPACE_VARIABLE
from scv.core.lines import LineSplitter
from scv.core.stopping import SETTLE_SECONDS
from scv.core.traceparent import TRACEPARENT, TRACESTATE
from scv.telemetry.settings import PASSED_ON_NAMES, PASSED_ON_PREFIXES

PUMP_SECONDS = 0.2
STDERR_TAIL = 4096
MAX_LINE = 1 << 20


def _telemetry_variable(name: str) -> bool:
    return name.startswith(PASSED_ON_PREFIXES) or name in PASSED_ON_NAMES


def runner_environment(inherited: dict[str, str], telemetry: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment minus Ray's own (its token path and addresses stay with Ray) and
    any TRACEPARENT (each task carries its own parent); a tracing driver's `telemetry` variables
    replace the node's, so the runner exports where the driver does."""
    env = {name: value for name, value in inherited.items()
           if not name.startswith("RAY_") and name not in (TRACEPARENT, TRACESTATE)
           and not (telemetry and _telemetry_variable(name))}
    env.update(telemetry or {})
    env[PARENT_VARIABLE] = str(os.getpid())
    return env


class _RunOneProcess:
    # This Ray worker's runner, kept between tasks. A class attribute, not a module global: Ray
    # may ship the task function by value, with globals of its own; the class is imported.
    kept: "_RunOneProcess | None" = None

    def __init__(self, telemetry: dict[str, str]):
        self.telemetry = telemetry
        # From this (the task's main) thread: the runner's death signal follows the thread that forked it.
        self.proc = subprocess.Popen([sys.executable, "-m", "scv", "batch", "--run-one"],
                                     env=runner_environment(dict(os.environ), telemetry),
                                     cwd=os.environ.get(WORKSPACE_VARIABLE) or None, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        proc = self.proc
        self.selector = selectors.DefaultSelector()
        self.selector.register(proc.stdout, selectors.EVENT_READ, "out")
        self.selector.register(proc.stderr, selectors.EVENT_READ, "err")
        self.open = 2
        self.lines: list[bytes] = []
        self.splitter = LineSplitter(lambda run: self.lines.extend(line for line in run.split(b"\n") if line.strip()),
                                     MAX_LINE)
        self.stderr = b""
        self.saw_result = False

    def _read(self, timeout: float) -> list[bytes]:
        for key, _ in self.selector.select(timeout):
            data = os.read(key.fileobj.fileno(), 65536)
            if not data:
                self.selector.unregister(key.fileobj)
                self.open -= 1
                continue
            if key.data == "err":
                self.stderr = (self.stderr + data)[-STDERR_TAIL:]
                continue
            self.splitter.feed(data)
        lines, self.lines = self.lines, []
        return lines

    def usable(self) -> bool:
        return self.proc.poll() is None and self.open == 2 and not self.splitter.holding

    def messages(self, payload: bytes):
        """The runner's lines for one task, up to and with its result line."""
        import msgspec
        self.saw_result, self.stderr = False, b""
        try:
            self.proc.stdin.write(payload + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return
        while self.open:
            for line in self._read(PUMP_SECONDS):
                try:
                    message = decode_line(line)
                except msgspec.DecodeError:     # not a runner line (ValidationError is one too)
                    continue
                yield msgspec.to_builtins(message)      # to the driver as {"type": ..., ...}
                if isinstance(message, ResultLine):
                    self.saw_result = True
                    return

    def failure(self, host: str) -> dict:
        try:
            code = self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.stop()
            code = self.proc.returncode
        tail = self.stderr.decode(errors="replace").strip().splitlines()[-3:]
        return {"status": "failed", "error": f"the runner on {host} exited with status {code} without a result"
                + (f": {' | '.join(tail)}" if tail else "")}

    def stop(self) -> None:
        """The runner tears its tree down on SIGTERM; one that does not end within the cancel
        budget is killed (what is below it then cleans up after its supervisor)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + SETTLE_SECONDS
        while self.proc.poll() is None and time.monotonic() < deadline:
            if self.open:
                self._read(PUMP_SECONDS)        # keep its pipes drained, or it blocks writing its result
            else:
                time.sleep(PUMP_SECONDS)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def hear_ray_cancel() -> None:
    """Lets Ray's soft cancel reach this task. Ray raises it as KeyboardInterrupt through Python's
    SIGINT handler, which a worker never gets when SIGINT was ignored where Ray started (a shell
    script's `scv batch ... &` ignores SIGINT and SIGQUIT): the cancel then did nothing, and only
    the force-cancel, without the runner's own teardown, ended the task."""
    # Only the main thread may set a handler; Ray runs a plain task there (an actor's thread gets a ValueError).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGINT, signal.default_int_handler)


@ray.remote(num_cpus=0, max_retries=0)
def run_task(payload: bytes, telemetry: dict[str, str] | None = None):
    """`telemetry`: the driver's OTEL_* variables when it traces (scv/telemetry/settings.py)."""
    hear_ray_cancel()
    host = socket.gethostname()
    yield {"type": "started", "node_id": ray.get_runtime_context().get_node_id(), "host": host}
    telemetry = telemetry or {}
    kept = _RunOneProcess.kept
    if kept is not None and kept.usable() and kept.telemetry != telemetry:
        kept.stop()         # a runner exports where it was started to: another driver's needs its own
    if kept is None or not kept.usable():
        _RunOneProcess.kept = _RunOneProcess(telemetry)
    runner = _RunOneProcess.kept
    try:
        yield from runner.messages(payload)
    except BaseException:       # Ray's cancel (KeyboardInterrupt), or the generator closed
        # RUNNING -> CANCELLING: the runner stops its agent, reports, and exits
        _RunOneProcess.kept = None
        runner.stop()
        raise
    if not runner.saw_result:
        _RunOneProcess.kept = None
        yield {"type": "result", "result": runner.failure(host)}
