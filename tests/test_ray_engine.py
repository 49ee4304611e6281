"""The Ray engine against a private one-machine Ray, driven directly in a child process: after a
task is cancelled, `events()` returns while the task is still tearing down, so the runner's
stop steps (the force-cancel after the cancel wait) keep running; the task's end still arrives.
The driver starts with SIGINT ignored, as a shell script's `scv batch ... &` does: the task still
hears Ray's soft cancel (scv/batch/ray_task.py hear_ray_cancel)."""

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, scv_env

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed here (pip install 'scv[ray]'; .ci/run installs it)", allow_module_level=True)

# A bound on each wait (the task to start, its teardown for its release, its end to arrive), never
# a measurement.
DEADLINE = 150

DRIVER = r'''
import json, os, signal, sys, time
# As `scv batch ... &` in a shell script starts: SIGINT ignored, and so in every Ray process.
signal.signal(signal.SIGINT, signal.SIG_IGN)
import ray
from scv.batch.engine import Finished, Started, Submission
from scv.batch.ray_engine import RayEngine
from scv.batch.ray_task import hear_ray_cancel
from scv.batch.tasks import Task, TaskLine

folder, ray_temp, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
ray.init(num_cpus=1, resources={"scv_agent_fake": 1}, include_dashboard=False, log_to_driver=False,
         _temp_dir=ray_temp)

@ray.remote(num_cpus=0, max_retries=0)
def slow_to_stop(payload, telemetry=None):
    """Like an agent that ignores SIGTERM: once cancelled, it ends only when released."""
    hear_ray_cancel()
    with open(os.path.join(folder, "pid"), "w") as fh:
        fh.write(str(os.getpid()))
    yield {"type": "started", "node_id": ray.get_runtime_context().get_node_id(), "host": "here"}
    try:
        while True:
            time.sleep(0.05)
    except BaseException:
        end = time.monotonic() + deadline
        while not os.path.exists(os.path.join(folder, "release")) and time.monotonic() < end:
            time.sleep(0.05)
        open(os.path.join(folder, "ended"), "w").close()
        raise

engine = RayEngine()
engine._run_task = slow_to_stop
submission = Submission(Task(1, TaskLine(id="t", prompt="p"), None, agent="fake"))
engine.submit(submission)
seen, end = [], time.monotonic() + deadline
while not any(isinstance(e, Started) for e in seen) and time.monotonic() < end:
    seen += engine.events(0.2)
started = any(isinstance(e, Started) for e in seen)
engine.cancel(submission.key)
after_cancel = [type(e).__name__ for e in engine.events(0.2)]
ended_when_returned = os.path.exists(os.path.join(folder, "ended"))
open(os.path.join(folder, "release"), "w").close()
finished, end = [], time.monotonic() + deadline
while not finished and time.monotonic() < end:
    finished = [e for e in engine.events(0.2) if isinstance(e, Finished)]
why = {}
if not finished:        # a cancel the task never heard, or an end the engine missed
    why["teardown_ended"] = os.path.exists(os.path.join(folder, "ended"))
    why["end_ready"] = bool(ray.wait([engine._gens[submission.key].completed()], timeout=0)[0])
    try:
        with open(os.path.join(folder, "pid")) as fh, open(f"/proc/{fh.read()}/status") as st:
            why["task_process"] = [l.strip() for l in st if l.startswith(("State", "SigIgn", "SigCgt"))]
    except OSError as exc:
        why["task_process"] = repr(exc)
print(json.dumps({"started": started, "after_cancel": after_cancel, "ended_when_returned": ended_when_returned,
                  "status": finished[0].status if finished else None, "why": why}))
ray.shutdown()
'''


@pytest.mark.time_limit(3 * DEADLINE + 120)
def test_events_return_while_a_cancelled_task_still_tears_down_and_its_end_arrives(tmp_path):
    ray_temp = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))      # Ray's socket paths must stay short
    try:
        env = {k: v for k, v in scv_env().items() if not k.startswith("RAY_")}
        run = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path), str(ray_temp), str(DEADLINE)],
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=2 * DEADLINE + 90,
                             start_new_session=True)
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["started"], f"the task did not start within {DEADLINE} s"
    # Before the fix, the pull waited in next() for the teardown, which ends only once released.
    assert found["ended_when_returned"] is False
    assert found["after_cancel"] == []
    assert found["status"] == "cancelled", json.dumps(found["why"])
