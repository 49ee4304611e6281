"""The job table on its own, with a recording session and a runner whose calls finish when the
test says: the 16 newest finished jobs are remembered, a report turn takes up to four unseen
jobs when it starts (results that arrive while it waits join it), and results the model has
read are never reported."""

import threading

from scv.core.errors import RefusedError
from scv.core.messages import Result
from scv.jobs.manager import Jobs
from tests.fakes import wait_for


class Runner:
    """Each job's call blocks until its prompt is released; finishes with that prompt as the reply."""
    release: dict[str, threading.Event] = {}

    def call(self, prompt):
        def run(cancel, on_progress, on_approval):
            gate = self.release.setdefault(prompt, threading.Event())
            while not gate.wait(0.02):
                if cancel.cancelled:
                    return Result(ok=False, value={"agent": "codex", "status": "failed", "error": "stopped"})
            return Result(ok=True, value={"agent": "codex", "status": "completed", "reply": prompt})
        return run


class Session:
    def __init__(self):
        self.reports = []

    def queue_report(self, build):
        self.reports.append(build)


def make(limit=32):
    Runner.release = {}
    session = Session()
    return Jobs(limit, "on-risk", False, session.queue_report), session, Runner()


def start(jobs, runner, prompt):
    return jobs.start("codex", None, runner.call(prompt))


def release(job_prompt: str) -> None:
    Runner.release.setdefault(job_prompt, threading.Event()).set()


def test_limit_then_reports_of_four_built_when_the_turn_starts():
    jobs, session, runner = make(limit=6)
    started = [start(jobs, runner, f"task {i}") for i in range(6)]
    try:
        start(jobs, runner, "one too many")
        raise AssertionError("a seventh job started")
    except RefusedError as err:
        assert "agent.max_background" in str(err) and "agent_cancel" in str(err)
    for i in range(5):
        release(f"task {i}")
        wait_for(lambda: not started[i].running)
    assert len(session.reports) == 1                # queued at the first finish; the others join it
    prompt, origin = session.reports.pop()()
    assert [j["job"] for j in origin["jobs"]] == ["job-1", "job-2", "job-3", "job-4"]
    assert prompt.startswith("[SCV background report]") and "Reply:\ntask 3" in prompt
    assert len(session.reports) == 1                # the fifth waits for the next report turn
    jobs.describe(started[4])                       # ... but the model read it meanwhile
    assert session.reports.pop()() is None
    assert jobs.outstanding()                       # job-6 still runs
    release("task 5")
    wait_for(lambda: not started[5].running)
    prompt, origin = session.reports.pop()()
    assert [j["job"] for j in origin["jobs"]] == ["job-6"]
    assert not jobs.outstanding()


def test_results_read_through_status_are_not_reported_and_16_are_remembered():
    jobs, session, runner = make()
    started = []
    for i in range(20):
        job = start(jobs, runner, f"t{i}")
        Runner.release.setdefault(f"t{i}", threading.Event()).set()
        wait_for(lambda: not job.running)
        jobs.describe(job)                          # the model read it
        started.append(job)
    assert [build() for build in session.reports] == [None] * len(session.reports)
    remembered = [j.id for j in jobs.all()]
    assert remembered == [f"job-{i}" for i in range(5, 21)]
    assert not jobs.outstanding()


def test_close_cancels_running_jobs():
    jobs, session, runner = make()
    job = start(jobs, runner, "forever")
    jobs.close()
    assert job.status == "cancelled" and job.result["status"] == "cancelled"
    assert session.reports == []                    # a stop nobody is told about in a report


def test_jobs_reported_in_turns_are_forgotten_beyond_the_16_newest():
    jobs, session, runner = make(limit=20)
    started = [start(jobs, runner, f"r{i}") for i in range(20)]
    for i, job in enumerate(started):
        release(f"r{i}")
        wait_for(lambda: not job.running)
    reported = []
    while session.reports:                          # five report turns of four, none read before
        built = session.reports.pop(0)()
        reported += [j["job"] for j in built[1]["jobs"]]
    assert reported == [f"job-{i}" for i in range(1, 21)]
    assert [j.id for j in jobs.all()] == [f"job-{i}" for i in range(5, 21)]
    assert not jobs.outstanding()
