"""Issue 2's benchmarks: the cost of the supervisor path against bare baselines, in one process."""

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scv.config.load import Config, ToolsConfig
from scv.core.frames import frame
from scv.core.messages import Result, encode
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.supervision.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules
from tests.benchmarks.common import PeakMemory, interleaved, line, pss_bytes, timed
from scv.core.oscalls import REAL

ROOT = Path(__file__).resolve().parents[2]


def bare_fork_round_trip(request: bytes, reply: bytes) -> None:
    """The floor: fork a child that reads the request from a pipe and writes the reply back."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(to_w)
        os.close(from_r)
        os.read(to_r, 1 << 16)
        os.write(from_w, reply)
        os._exit(0)
    os.close(to_r)
    os.close(from_w)
    os.write(to_w, request)
    while os.read(from_r, 1 << 16):
        pass
    os.waitpid(pid, 0)
    os.close(to_w)
    os.close(from_r)


def python_processes(root: int) -> list[int]:
    """The scv process and its Python descendants (not the command it runs)."""
    pids = [root, *REAL.descendants(root)]
    out = []
    for pid in pids:
        try:
            if "python" in os.path.basename(os.readlink(f"/proc/{pid}/exe")):
                out.append(pid)
        except OSError:
            continue
    return out


def flood_memory(ws: Path) -> int:
    """Peak PSS of a whole `scv tool bash` process tree while its command prints 1 GiB."""
    command = [sys.executable, "-m", "scv", "tool", "bash", '{"command":"head -c 1G /dev/zero"}', "--auto-approve",
               "-C", str(ws)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    with PeakMemory(lambda: python_processes(proc.pid), measure=pss_bytes) as peak:
        proc.wait()
    return peak.peak


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        content = "".join(f"line {i:04d} of a two kilobyte file\n" for i in range(64))[:2048]
        (ws / "f.txt").write_text(content)
        config = Config(tools=ToolsConfig(output_limit_bytes=1 << 20))
        ctx = ToolContext(workspace=ws, config=config)
        with Supervisor(preload=executor_modules()) as sup:
            runner = ToolRunner(sup, build_registry(ctx), ctx, approve_all)
            read = runner.prepare("read", {"path": "f.txt"})
            request = frame(encode(read.call.__class__.__name__.encode() + b"x" * 200))
            reply = frame(encode(Result(ok=True, value={"content": content, "total_bytes": 2048})))
            for _ in range(30):
                runner.run(read)
                bare_fork_round_trip(request, reply)
            ours, bare = interleaved(lambda: runner.run(read), lambda: bare_fork_round_trip(request, reply), 400)
            line("warm read of 2 KB through the supervisor (median)", f"{ours * 1e3:.2f} ms")
            line("bare os.fork round trip, same request and reply (median)", f"{bare * 1e3:.2f} ms")
            line("ratio (target <= 2.0)", f"{ours / bare:.2f}")

            true = runner.prepare("bash", {"command": "true"})
            ours, bare = interleaved(lambda: runner.run(true),
                                     lambda: subprocess.run(["/bin/bash", "-lc", "true"]), 20)
            line("bash `true` through the supervisor (median)", f"{ours * 1e3:.1f} ms")
            line("subprocess.run(['/bin/bash','-lc','true']) (median)", f"{bare * 1e3:.1f} ms")
            line("ratio (target <= 1.3)", f"{ours / bare:.2f}")

            flood = runner.prepare("bash", {"command": "head -c 1G /dev/zero"})
            pipeline = ["/bin/bash", "-c", "head -c 1G /dev/zero | cat >/dev/null"]
            ours_runs, bare_runs = [], []
            for _ in range(3):
                ours_runs.append(timed(lambda: runner.run(flood)))
                bare_runs.append(timed(lambda: subprocess.run(pipeline)))
            ours, bare = statistics.median(ours_runs), statistics.median(bare_runs)
            gib = 1 << 30
            line("drain 1 GiB through bash (median throughput)", f"{gib / ours / 1e6:.0f} MB/s")
            line("head -c 1G /dev/zero | cat >/dev/null", f"{gib / bare / 1e6:.0f} MB/s")
            line("throughput ratio (target >= 0.4)", f"{bare / ours:.2f}")
        line("peak memory (PSS) of a `scv tool bash` supervisor + fork point + worker",
             f"{flood_memory(ws) / (1 << 20):.1f} MiB (target <= 64 MiB)")

        scv = [str(ROOT / "bin" / "scv"), "tool", "read", '{"path":"f.txt"}', "-C", str(ws)]
        subprocess.run(scv, capture_output=True, check=True)
        cold = [timed(lambda: subprocess.run(scv, capture_output=True, check=True)) for _ in range(15)]
        python_only = [timed(lambda: subprocess.run([sys.executable, "-c", "pass"])) for _ in range(15)]
        line("cold `bin/scv tool read` (median, whole process)", f"{statistics.median(cold) * 1e3:.0f} ms")
        line("for scale: bare `python -c pass` (median)", f"{statistics.median(python_only) * 1e3:.0f} ms")
