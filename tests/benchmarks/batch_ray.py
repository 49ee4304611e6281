"""Issue 13's benchmark, run by `bin/bench batch` (tests/benchmarks/bench_batch.py): 200 tasks of a fake agent sleeping 0.5 s,
the local engine against the Ray engine on a one-machine cluster (`scv cluster head` and one
`scv cluster join`) with the same slots, both as real `scv batch` processes in this run: the
wall-time ratio (target Ray <= 1.3x local) and each one's overhead per task; the time from
SIGINT to the last agent process gone (target < 5 s for an agent that honours SIGTERM; within
the cancel budget plus 2 s for one that ignores it); and the driver's peak memory with a
10,000-task input (target < 200 MB). Skipped with a reason where Ray is not installed."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import PeakMemory, line, rss_bytes
from tests.delegation_fakes import gone
from tests.ray_cluster import Machine, free_port, kill_pids, shared_pids

TASKS = 200
SLOTS = 4
SLEEP = 0.5
BIG_INPUT = 10_000
MEMORY_SECONDS = 20.0

AGENT = """prompt="${{@: -1}}"
case "$prompt" in
  nap*) sleep 0.5 ;;
  term*) echo $$ >> {shared}/pids; sleep 300 & echo $! >> {shared}/pids; wait ;;
  stay*) trap '' TERM; echo $$ >> {shared}/pids; setsid bash -c 'echo $$ >> {shared}/pids; exec sleep 300' &
         sleep 300 & echo $! >> {shared}/pids; wait ;;
esac
printf '%s\\n' '{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"ok"}}}}'
"""


def _batch(path: Path, prompt: str, count: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"t{i}", "agent": "codex", "prompt": f"{prompt} {i}"}) + "\n"
                            for i in range(count)))
    return path


def _timed(machine: Machine, args: list[str]) -> float:
    started = time.perf_counter()
    done = machine.scv(*args, timeout=900)
    elapsed = time.perf_counter() - started
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
    assert done.returncode == 0 and all(x["status"] == "completed" for x in lines), done.stderr[-2000:]
    return elapsed


def _interrupt(machine: Machine, args: list[str], shared: Path, per_task: int, count: int) -> tuple[float, float]:
    """Seconds from SIGINT to the last agent process gone, and to the driver's exit."""
    (shared / "pids").unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "scv", *args], env=machine.env(), cwd=machine.workspace,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(shared_pids(shared)) < per_task * count:
            assert time.monotonic() < deadline and proc.poll() is None, "the tasks did not start"
            time.sleep(0.05)
        pids = shared_pids(shared)
        started = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        while not gone(pids):
            time.sleep(0.01)
        agents_gone = time.perf_counter() - started
        proc.wait(60)
        return agents_gone, time.perf_counter() - started
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_pids(shared_pids(shared))


def _driver_memory(machine: Machine, args: list[str]) -> float:
    proc = subprocess.Popen([sys.executable, "-m", "scv", *args], env=machine.env(), cwd=machine.workspace,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with PeakMemory(lambda: [proc.pid], rss_bytes) as peak:
            time.sleep(MEMORY_SECONDS)
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
        return peak.peak / 2**20
    finally:
        if proc.poll() is None:
            proc.kill()


def main() -> None:
    if importlib.util.find_spec("ray") is None:
        print("   skipped: Ray is not installed (pip install 'scv[ray]')")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shared = root / "shared"
        shared.mkdir()
        head = Machine("head", root / "head", shared).setup()
        node = Machine("node", root / "node", shared).setup()
        from tests.agent_fakes import install
        install(node.home / ".local" / "bin", "codex", node.root / "log").write(AGENT.format(shared=shared))
        try:
            started = time.perf_counter()
            done = head.scv("cluster", "head", "--port", str(free_port()), "--node-ip", "127.0.0.1", "--json")
            assert done.returncode == 0, done.stderr
            head_seconds = time.perf_counter() - started
            address = json.loads(done.stdout)["address"]
            token = node.root / "token"
            token.write_bytes((head.scv_home / "cluster" / "token").read_bytes())
            os.chmod(token, 0o600)
            started = time.perf_counter()
            done = node.scv("cluster", "join", address, "--token-file", str(token), "--slots", f"codex={SLOTS}",
                            "--node-ip", "127.0.0.1")
            assert done.returncode == 0, done.stderr
            join_seconds = time.perf_counter() - started
            line("cluster: scv cluster head / scv cluster join", f"{head_seconds:.1f} s / {join_seconds:.1f} s")
            ray_args = ["--engine", "ray", "--address", address, "--token-file", str(token), "--parallel", str(SLOTS)]
            local_args = ["--parallel", str(SLOTS)]
            warm = _batch(root / "warm.jsonl", "nap", SLOTS * 2)
            _timed(node, ["batch", str(warm), *local_args])
            _timed(node, ["batch", str(warm), *ray_args])
            naps = _batch(root / "naps.jsonl", "nap", TASKS)
            local = _timed(node, ["batch", str(naps), *local_args])
            ray = _timed(node, ["batch", str(naps), *ray_args])
            ideal = TASKS / SLOTS * SLEEP
            line(f"{TASKS} tasks sleeping {SLEEP} s, {SLOTS} slots: local engine",
                 f"{local:.1f} s, overhead {(local - ideal) / TASKS * SLOTS * 1000:.0f} ms per task")
            line(f"{TASKS} tasks sleeping {SLEEP} s, {SLOTS} slots: Ray engine",
                 f"{ray:.1f} s, overhead {(ray - ideal) / TASKS * SLOTS * 1000:.0f} ms per task")
            line("Ray engine / local engine wall time (target <= 1.3x)", f"{ray / local:.2f}x")
            terms = _batch(root / "term.jsonl", "term", SLOTS)
            stays = _batch(root / "stay.jsonl", "stay", SLOTS)
            for label, path, per_task in (("honours SIGTERM", terms, 2), ("ignores SIGTERM", stays, 3)):
                gone_after, exited = _interrupt(node, ["batch", str(path), *ray_args], shared, per_task, SLOTS)
                local_gone, local_exit = _interrupt(node, ["batch", str(path), *local_args], shared, per_task, SLOTS)
                line(f"SIGINT to the last agent process gone, agent {label}",
                     f"Ray {gone_after:.2f} s (driver exit {exited:.2f} s), local {local_gone:.2f} s "
                     f"(exit {local_exit:.2f} s)")
            big = _batch(root / "big.jsonl", "nap", BIG_INPUT)
            ray_mb = _driver_memory(node, ["batch", str(big), *ray_args])
            local_mb = _driver_memory(node, ["batch", str(big), *local_args])
            line(f"driver peak RSS, {BIG_INPUT}-task input, first {MEMORY_SECONDS:.0f} s (target < 200 MB)",
                 f"Ray {ray_mb:.0f} MB, local {local_mb:.0f} MB")
        finally:
            node.leave()
            head.leave()
            kill_pids(shared_pids(shared))


if __name__ == "__main__":
    main()
