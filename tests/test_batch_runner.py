"""The batch runner against a fake engine (tests/batch_fakes.py): slots and --parallel bound what
runs, an agent no node offers fails at once, a lost task runs again only within --retries, a task
waiting too long for a slot fails, and a stop cancels, then force-cancels, then gives up waiting,
so a run always ends with one line per started task and the documented exit status."""

import io
import json
import signal

from scv.batch.progress import Display, EventLines
from scv.batch.results import ResultSink
from scv.batch.runner import BatchRunner
from tests.batch_fakes import NODE, FakeEngine, make_tasks


def run(engine: FakeEngine, tasks, **options) -> tuple[int, list[dict], str, BatchRunner]:
    out, err = io.BytesIO(), io.StringIO()
    runner = BatchRunner(engine, tasks, ResultSink(None, out), EventLines(err, clock=engine.clock),
                         clock=engine.clock, **{"parallel": 8, **options})
    code = runner.run()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return code, lines, err.getvalue(), runner


def by_id(lines: list[dict]) -> dict[str, dict]:
    assert len({line["id"] for line in lines}) == len(lines), "a task has more than one result line"
    return {line["id"]: line for line in lines}


def test_slots_and_parallel_bound_what_runs_and_every_task_gets_one_line():
    engine = FakeEngine({"codex": 2, "claude": 1})
    tasks = make_tasks(*[(f"c{i}", "codex") for i in range(5)], *[(f"k{i}", "claude") for i in range(3)])
    code, lines, err, _ = run(engine, tasks, parallel=3)
    assert code == 0
    found = by_id(lines)
    assert sorted(found) == sorted(t.id for t in tasks)
    assert all(line["status"] == "completed" and line["attempt"] == 1 for line in lines)
    assert found["c0"]["node"] == {"host": "fake-host", "id": "n1"} and found["c0"]["line"] == 1
    assert engine.most_running == {"codex": 2, "claude": 1}
    assert "c0@fake-1: started" in err and "c0@fake-1: step 0" in err
    assert "8/8 done, 0 running, 0 failed, 0 lost" in err.splitlines()[-1]


def test_parallel_is_never_exceeded_across_agents():
    engine = FakeEngine({"codex": 10})
    in_flight = []
    submit = engine.submit

    def counting(submission):
        submit(submission)
        in_flight.append(sum(1 for r in engine._runs.values() if not r.done))
    engine.submit = counting
    code, lines, _, _ = run(engine, make_tasks(*[(f"t{i}", "codex") for i in range(12)]), parallel=4)
    assert code == 0 and len(lines) == 12 and max(in_flight) == 4


def test_an_agent_no_node_offers_fails_at_once_naming_what_is_offered():
    engine = FakeEngine({"codex": 1})
    code, lines, _, _ = run(engine, make_tasks(("a", "codex"), ("b", "grok")))
    assert code == 1
    found = by_id(lines)
    assert found["b"]["status"] == "failed" and "no node offers agent grok: codex 1" in found["b"]["error"]
    assert found["b"]["node"] is None and found["a"]["status"] == "completed"
    assert ("b", 1) not in engine.submitted        # never handed to the engine, so never waits


def test_a_task_without_agent_takes_the_first_preferred_one_on_offer():
    engine = FakeEngine({"claude": 1})
    code, lines, _, _ = run(engine, make_tasks(("a", None)), prefer=["codex", "claude"])
    assert code == 0 and lines[0]["status"] == "completed"
    code, lines, _, _ = run(FakeEngine({"claude": 1}), make_tasks(("a", None)), prefer=["codex"])
    assert code == 1 and "names no agent" in lines[0]["error"] and "claude 1" in lines[0]["error"]


def test_a_lost_task_runs_again_only_within_retries():
    engine = FakeEngine({"codex": 1}, outcomes={"a": ["lost", "completed"], "b": ["lost", "lost"]})
    code, lines, err, _ = run(engine, make_tasks(("a", "codex"), ("b", "codex")), retries=1)
    found = by_id(lines)
    assert found["a"]["status"] == "completed" and found["a"]["attempt"] == 2
    assert found["b"]["status"] == "lost" and found["b"]["attempt"] == 2 and "died" in found["b"]["error"]
    assert code == 1
    assert "a lost: node fake-1 died; running it again (attempt 2 of 2)" in err
    engine = FakeEngine({"codex": 1}, outcomes={"a": ["lost", "completed"]})
    code, lines, _, _ = run(engine, make_tasks(("a", "codex")))
    assert code == 1 and lines[0]["status"] == "lost" and engine.submitted == [("a", 1)]   # default: no re-run


def test_a_task_waiting_too_long_for_a_slot_is_cancelled_and_fails():
    engine = FakeEngine({"codex": 1}, duration=30.0)
    code, lines, _, _ = run(engine, make_tasks(("a", "codex"), ("b", "codex")), schedule_timeout=5)
    found = by_id(lines)
    assert found["a"]["status"] == "completed"
    assert found["b"]["status"] == "failed" and "waited more than 5 s for a free slot of agent codex" in \
        found["b"]["error"]
    assert (("b", 1), False) in engine.cancels and code == 1


def test_stop_cancels_running_tasks_starts_nothing_more_and_never_retries():
    engine = FakeEngine({"codex": 2}, outcomes={"a": ["hang"], "b": ["hang"]})
    tasks = make_tasks(("a", "codex"), ("b", "codex"), ("c", "codex"))
    out, err = io.BytesIO(), io.StringIO()
    runner = BatchRunner(engine, tasks, ResultSink(None, out), Display(err), parallel=2, clock=engine.clock,
                         retries=3)
    ticks = []

    def tick(tally):
        ticks.append(tally.running)
        if tally.running == 2:
            runner.stop(signal.SIGINT)
    runner.display.tick = tick
    assert runner.run() == 130
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted((line["id"], line["status"]) for line in lines) == [("a", "cancelled"), ("b", "cancelled")]
    assert ("c", 1) not in engine.submitted and len(engine.submitted) == 2
    assert {key for key, force in engine.cancels} == {("a", 1), ("b", 1)}
    assert err.getvalue().strip().endswith("(interrupted)") and err.getvalue().count("\n") == 1   # Display: final only


def test_a_task_ignoring_the_soft_cancel_is_forced_after_the_cancel_wait_and_sigterm_exits_143():
    engine = FakeEngine({"codex": 1}, outcomes={"a": ["stubborn"]}, cancel_wait=12.0)
    out = io.BytesIO()
    runner = BatchRunner(engine, make_tasks(("a", "codex")), ResultSink(None, out), Display(io.StringIO()),
                         parallel=1, clock=engine.clock)
    runner.display.tick = lambda tally: runner.stop(signal.SIGTERM) if tally.running else None
    start = engine.clock.now
    assert runner.run() == 143
    assert [force for _, force in engine.cancels] == [False, True]
    assert engine.clock.now - start >= 12.0
    assert json.loads(out.getvalue())["status"] == "cancelled"


def test_a_task_that_never_reports_after_a_forced_cancel_is_written_as_cancelled():
    engine = FakeEngine({"codex": 1}, outcomes={"a": ["silent"]}, cancel_wait=2.0)
    out = io.BytesIO()
    runner = BatchRunner(engine, make_tasks(("a", "codex")), ResultSink(None, out), Display(io.StringIO()),
                         parallel=1, clock=engine.clock, force_wait=3.0)
    runner.display.tick = lambda tally: runner.stop() if tally.running else None
    assert runner.run() == 130
    line = json.loads(out.getvalue())
    assert line["status"] == "cancelled" and "did not report" in line["error"] and line["node"]["id"] == "n1"


def test_a_failed_task_makes_the_exit_status_one():
    engine = FakeEngine({"codex": 1}, outcomes={"b": ["failed"]})
    code, lines, err, _ = run(engine, make_tasks(("a", "codex"), ("b", "codex")))
    assert code == 1 and by_id(lines)["b"]["status"] == "failed"
    assert "(b: failed)" in err


def test_a_runners_note_is_printed_once_even_by_the_quiet_display():
    note = "scv: telemetry: OpenTelemetry is not installed here; install it with pip install 'scv[otel]'"
    engine = FakeEngine({"codex": 2}, note=note)
    out, err = io.BytesIO(), io.StringIO()
    runner = BatchRunner(engine, make_tasks(("a", "codex"), ("b", "codex"), ("c", "codex")), ResultSink(None, out),
                         Display(err), parallel=2, clock=engine.clock)
    assert runner.run() == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 3 and not [line for line in lines if "note" in line or "telemetry" in json.dumps(line)]
    printed = [line for line in err.getvalue().splitlines() if line.startswith("scv: telemetry: ")]
    assert printed == [f"{note} (node {NODE.label()})"]
