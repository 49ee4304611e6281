"""The runner's usage-limit pauses against the fake engine and its fake clock (tests/batch_fakes.py),
so waits of minutes cost no real time: a paused agent starts nothing before its reset, a reset past
--quota-wait ends the task `quota` at once, a limit without a reset backs off doubling three times,
and --fallback moves a paused agent's queued tasks to the next agent without their model."""

import io
import json

import msgspec

from scv.batch.progress import EventLines
from scv.batch.quota import QuotaGate, move_to
from scv.batch.results import ResultSink
from scv.batch.runner import BatchRunner
from tests.batch_fakes import FakeEngine, make_tasks


def run(engine: FakeEngine, tasks, quota: QuotaGate, **options):
    out, err = io.BytesIO(), io.StringIO()
    quota.wall = engine.clock
    runner = BatchRunner(engine, tasks, ResultSink(None, out), EventLines(err, clock=engine.clock),
                         clock=engine.clock, quota=quota, **{"parallel": 1, **options})
    code = runner.run()
    found = {line["id"]: line for line in map(json.loads, out.getvalue().splitlines())}
    return code, found, err.getvalue()


def test_a_paused_agent_starts_nothing_before_its_reset_and_every_task_completes():
    engine = FakeEngine({"codex": 2}, outcomes={"a": ["limit:30", "completed"]})
    code, found, err = run(engine, make_tasks(("a", "codex"), ("b", "codex"), ("c", "codex")), QuotaGate())
    assert code == 0 and {line["status"] for line in found.values()} == {"completed"}
    [(_, _, first)] = [start for start in engine.starts if start[0] == "a"][:1]
    reset = first + engine.duration + 30
    later = engine.starts[1:]
    assert [start[0] for start in later] == ["a", "b", "c"] and all(when >= reset for _, _, when in later)
    assert err.count("codex paused until ") == 1 and "(usage limit)" in err
    assert found["a"]["attempt"] == 1


def test_a_reset_past_quota_wait_ends_the_task_quota_and_its_agent_stays_paused():
    engine = FakeEngine({"codex": 1}, outcomes={"a": ["limit:5000"]})
    code, found, _ = run(engine, make_tasks(("a", "codex")), QuotaGate(wait=600))
    assert code == 1 and found["a"]["status"] == "quota"
    assert "later than --quota-wait (600 s) allows" in found["a"]["error"]
    assert engine.submitted == [("a", 1)]


def test_without_a_reset_the_agent_backs_off_doubling_three_times_then_the_task_ends_quota():
    engine = FakeEngine({"codex": 1}, outcomes={"a": ["limit"] * 5})
    code, found, err = run(engine, make_tasks(("a", "codex")), QuotaGate(backoff=10))
    assert code == 1 and found["a"]["status"] == "quota" and "after 3 waits" in found["a"]["error"]
    starts = [when for _, _, when in engine.starts]
    assert len(starts) == 4
    gaps = [later - (earlier + engine.duration) for earlier, later in zip(starts, starts[1:])]
    assert [gap >= wait for gap, wait in zip(gaps, (10, 20, 40))] == [True, True, True]
    assert err.count("codex paused until ") == 3


def test_fallback_moves_queued_tasks_of_a_paused_agent_without_their_model():
    engine = FakeEngine({"codex": 1, "claude": 1}, outcomes={"a": ["limit:3000", "completed"]})
    tasks = make_tasks(("a", "codex"), ("b", "codex"))
    tasks[1].spec = msgspec.structs.replace(tasks[1].spec, model="gpt-x", effort="high")
    moved = []

    def retarget(task, agent):
        again = move_to(task, agent, lambda args: args)
        moved.append((task.id, agent, again.spec.model, again.spec.effort, again.prepared["agent"]))
        return again
    code, found, _ = run(engine, tasks, QuotaGate(wait=60, fallback=("pi", "claude"), retarget=retarget))
    assert code == 0 and {line["status"] for line in found.values()} == {"completed"}
    assert found["a"]["agent"] == "claude" and found["b"]["agent"] == "claude"
    assert sorted(moved) == [("a", "claude", None, None, "claude"), ("b", "claude", None, None, "claude")]  # no pi
    assert [agent for _, agent, _ in engine.starts] == ["codex", "claude", "claude"]
