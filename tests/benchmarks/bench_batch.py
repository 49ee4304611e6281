"""Issue 6's benchmark: `scv batch` on a fake agent that answers at once (100 tasks, parallel 4):
tasks per second against launching the same fake 100 times directly (4 at a time), and the
supervisor's own CPU time per task; then 4 fake agents each sleeping 10 s: the supervisor's CPU
over those seconds (target under 1 %). The batch runs in this process, so `time.process_time()`
is the supervisor's CPU (its threads), not the workers' or the agents'."""

import io
import json
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scv.batch import tasks as batch_tasks
from scv.batch.local_engine import AgentCalls, LocalEngine
from scv.batch.progress import Display
from scv.batch.results import ResultSink
from scv.batch.runner import BatchRunner
from tests.agent_fakes import install

TASKS = 100
PARALLEL = 4
SLEEPERS = 4
SLEEP_SECONDS = 10
REPLY = ('{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"ok"}}\n'
         '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}\n')


def _setup(root: Path) -> Path:
    user = root / "user"
    os.environ.update(HOME=str(user), PATH="/usr/bin:/bin", SCV_HOME=str(root / "scv-home"))
    (root / "scv-home").mkdir()
    agent = install(user / ".local" / "bin", "codex", root / "log")
    agent.write('case "${@: -1}" in sleep*) sleep ' + str(SLEEP_SECONDS) + ' ;; esac\n'
                f"printf '%s' '{REPLY}'\n")
    workspace = root / "ws"
    workspace.mkdir()
    return workspace


def _batch(calls: AgentCalls, prompts: list[str], root: Path) -> tuple[float, float, bool]:
    path = root / f"batch-{time.monotonic_ns()}.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "agent": "codex", "prompt": p}) + "\n"
                            for i, p in enumerate(prompts)))
    loaded = batch_tasks.load(path, calls.prepare)
    runner = BatchRunner(LocalEngine(calls, PARALLEL), loaded, ResultSink(None, io.BytesIO()), Display(io.StringIO()),
                         parallel=PARALLEL)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    runner.run()
    return time.perf_counter() - wall0, time.process_time() - cpu0, runner.all_completed


def _direct(root: Path) -> float:
    """The baseline: the same fake agent launched 100 times directly, 4 at a time."""
    launcher = str(root / "user" / ".local" / "bin" / "codex")

    def once(i: int) -> None:
        subprocess.run([launcher, "exec", "--json", f"task {i}"], stdout=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL, check=True)
    started = time.perf_counter()
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(once, range(TASKS)))
    return time.perf_counter() - started


def main() -> None:
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = _setup(root)
        calls = AgentCalls(str(workspace), PARALLEL)
        try:
            _batch(calls, ["warm up"] * PARALLEL, root)
            baseline = _direct(root)
            wall, cpu, ok = _batch(calls, [f"task {i}" for i in range(TASKS)], root)
            assert ok, "a benchmark task did not complete"
            print(f"   baseline: the fake agent launched directly, {TASKS} times at {PARALLEL} at once: "
                  f"{TASKS / baseline:.1f} tasks/s")
            print(f"   scv batch --parallel {PARALLEL}, {TASKS} tasks: {TASKS / wall:.1f} tasks/s "
                  f"(ratio {wall / baseline:.2f}x the direct launches' time); supervisor CPU "
                  f"{cpu / TASKS * 1000:.2f} ms per task")
            wall, cpu, ok = _batch(calls, ["sleep please"] * SLEEPERS, root)
            assert ok, "a sleeping task did not complete"
            print(f"   {SLEEPERS} agents sleeping {SLEEP_SECONDS} s: {wall:.1f} s wall, supervisor CPU "
                  f"{cpu * 1000:.0f} ms = {cpu / wall * 100:.2f} % of one core (target < 1 %)")
        finally:
            calls.close()
            os.environ.clear()
            os.environ.update(saved)
    from tests.benchmarks import batch_ray       # the local engine against the Ray engine (issue 13)
    batch_ray.main()
    from tests.benchmarks import batch_worktree     # isolated tasks (issue 23); also on its own
    batch_worktree.main()


if __name__ == "__main__":
    main()
