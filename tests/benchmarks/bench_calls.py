"""Issue 15's per-call benchmark: a warm `read` call in a session (prepare, approve, run, as the
turn loop does, back to back as a turn with many small reads makes them) against the floor, a
bare os.fork request/reply over a pipe, in the same process. A traced run of the same call then
splits its time into its parts so the next step is visible."""

import os
import statistics
import tempfile
import time
from pathlib import Path

from scv.config.load import Config
from scv.core.cancellation import Cancellation
from scv.core.frames import frame
from scv.core.messages import Result, decode_from_worker, encode
from scv.providers.script import ScriptProvider
from scv.session.calls import CallLaunch
from scv.session.session import Session
from scv.supervision.supervisor import ONE_CALL, Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import executor_modules
from tests.benchmarks.bench_supervisor import bare_fork_round_trip
from tests.benchmarks.common import interleaved, line
from workers.read import execute as read_execute
from workers.running.cancel_token import CancelToken
from workers.runtime import WorkerContext

BATCH = 5           # calls per timed round, back to back
ROUNDS = 60
TRACED = 200
TRACES: list[dict] = []


class CountingChannel:
    """The call's real channel, counting the relay's wake-ups (each `wait` that returned)."""

    def __init__(self, channel, trace: dict):
        self._channel = channel
        self._trace = trace

    def wait(self, timeout: float):
        events = self._channel.wait(timeout)
        self._trace["wakeups"] += 1
        if any(type(e).__name__ == "Message" for e in events):
            self._trace.setdefault("result_at", time.perf_counter())
        return events

    def __getattr__(self, name):
        return getattr(self._channel, name)


class TracedLaunch(CallLaunch):
    """Runs the message as `Supervisor.run` does, timing each step (into TRACES)."""

    def fresh(self, message, cancel=None) -> Result:
        sup = self.supervisor
        trace = {"wakeups": 0, "start": time.perf_counter()}
        request = frame(encode(message))
        trace["encoded"] = time.perf_counter()
        worker, channel = sup.spawn(message.id, self.ctx.config.tools.worker_memory_mb << 20, ONE_CALL, first=request)
        trace["spawn_sent"] = time.perf_counter()
        end = sup.relay(message, worker, CountingChannel(channel, trace), cancel=cancel or self.cancel,
                        on_progress=None, on_approval=None)
        trace["relayed"] = time.perf_counter()
        channel.close()
        result = sup.finish(message, worker, end)
        trace["done"] = time.perf_counter()
        TRACES.append(trace)
        return result


def hand_off_round_trip(sup: Supervisor) -> float:
    """Spawn sent -> Spawned received: the fork point giving the pipes to its spare."""
    worker_id, _ = sup.new_handle()
    started = time.perf_counter()
    worker, channel = sup.spawn(worker_id, 256 << 20, ONE_CALL)
    worker.spawned.wait(5)
    took = time.perf_counter() - started
    channel.close()         # the worker reads EOF and exits without a call
    worker.exited.wait(5)
    return took


def executor_alone(message, workspace: Path) -> float:
    """The read executor's own time for the same call, run in this process."""
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        ctx = WorkerContext(call=message, workspace_fd=fd, token=CancelToken(None), out_fd=-1)
        runs = []
        for _ in range(200):
            started = time.perf_counter()
            read_execute(message.args, ctx)
            runs.append(time.perf_counter() - started)
        return statistics.median(runs)
    finally:
        os.close(fd)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        content = "".join(f"line {i:04d} of a two kilobyte file\n" for i in range(64))[:2048]
        (ws / "f.txt").write_text(content)
        script = Path(tmp) / "none.jsonl"
        script.write_text('{"text": "done"}\n')
        with Supervisor(preload=executor_modules()) as sup:
            ctx = ToolContext(workspace=ws, config=Config())
            session = Session(sup, ctx, ScriptProvider(script), emit=lambda name, params: None)
            runner = session.runner
            cancel = Cancellation()
            last: list[Result] = []

            def session_reads() -> None:
                for _ in range(BATCH):
                    prepared = runner.prepare("read", '{"path": "f.txt"}')
                    runner.approve(prepared)
                    last.append(runner.run(prepared, cancel=cancel))

            reply = frame(encode(Result(ok=True, value={"content": content, "total_bytes": 2048})))
            request = frame(encode(runner.prepare("read", {"path": "f.txt"}).call.__class__.__name__.encode()
                                   + b"x" * 200))

            def bare_forks() -> None:
                for _ in range(BATCH):
                    bare_fork_round_trip(request, reply)

            for _ in range(5):
                session_reads()
                bare_forks()
            assert all(result.ok for result in last), last[-1]
            ours, bare = interleaved(session_reads, bare_forks, ROUNDS)
            ours, bare = ours / BATCH, bare / BATCH
            line(f"warm read of 2 KB in a session, {BATCH} back to back (median per call)", f"{ours * 1e3:.2f} ms")
            line("bare os.fork request/reply over a pipe (median per call)", f"{bare * 1e3:.2f} ms")
            line("ratio (target <= 2.5)", f"{ours / bare:.2f}")

            # The same calls again, through a launch that times each step.
            spec = runner.registry.get("read")
            prepared = runner.prepare("read", {"path": "f.txt"})
            for _ in range(TRACED):
                launch = TracedLaunch(sup, spec, prepared.call, ctx, cancel, None, None)
                assert spec.run(prepared.call, ctx, launch).ok
            traces = TRACES[20:]
            message = CallLaunch(sup, spec, prepared.call, ctx, None, None, None).message(
                spec.executor, spec.worker_args(prepared.call, ctx))
            executor = executor_alone(message, ws)
            hand_offs = []
            for _ in range(30):
                hand_offs.append(hand_off_round_trip(sup))
                time.sleep(0.005)       # a spare is ready again, as between a turn's calls
            cancel.close()

        payload = reply[4:]
        decode_times = []
        for _ in range(200):
            started = time.perf_counter()
            decode_from_worker(payload)
            decode_times.append(time.perf_counter() - started)

    def part(start: str, end: str) -> float:
        return statistics.median(t[end] - t[start] for t in traces if end in t)

    whole = statistics.median(t["done"] - t["start"] for t in traces)
    hand_off, decode = statistics.median(hand_offs), statistics.median(decode_times)
    in_worker = part("spawn_sent", "result_at")
    line(f"traced call, {len(traces)} back to back (median)", f"{whole * 1e3:.3f} ms")
    line("  encode the Call and frame it", f"{part('start', 'encoded') * 1e3:.3f} ms")
    line("  spawn request: pipes, early write, Spawn + fds to the fork point",
         f"{part('encoded', 'spawn_sent') * 1e3:.3f} ms")
    line("  Spawn sent -> reply seen by the relay, of which:", f"{in_worker * 1e3:.3f} ms")
    line("    fork point hand-off (Spawn -> Spawned, measured alone)", f"{hand_off * 1e3:.3f} ms")
    line("    the read executor itself (measured alone, in process)", f"{executor * 1e3:.3f} ms")
    line("    worker start and reply write (the rest)", f"{(in_worker - hand_off - executor) * 1e3:.3f} ms")
    line("  reply decode (2 KB Result, measured alone)", f"{decode * 1e3:.3f} ms")
    line("  relay after the reply (its end, stderr, state)", f"{part('result_at', 'relayed') * 1e3:.3f} ms")
    line("  close the channel, finish the result", f"{part('relayed', 'done') * 1e3:.3f} ms")
    line("  relay wake-ups per call (plus Spawned and Exited on the reader thread)",
         f"{statistics.median(t['wakeups'] for t in traces):.0f} + 2")
