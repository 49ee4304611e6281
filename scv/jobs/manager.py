"""A session's background jobs.

A job is an `agent` call that was validated and approved in the foreground, then runs in its
own worker on a thread of its own (the tool runner hands it a `run` function that goes through a
runner of its own, so it never waits for the session's foreground calls, nor they for it). At
most `agent.max_background` run at once; the 16 newest finished jobs are remembered. A finished
job whose result the model has not seen is reported in a turn the session starts itself once
idle (up to four jobs a turn). Closing the session cancels every running job, which stops its
processes.

Approvals a nested agent relays from inside a job get what the session would answer without
asking anyone: the policy's own verdict, else the client's declared auto-approval, else a denial.
"""

import itertools
import re
import threading
import time
from typing import Any, Callable

from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from scv.core.messages import ApprovalRequest, Result
from scv.core.stopping import SETTLE_SECONDS
from scv.jobs import report
from scv.jobs.job import Job, JobState, final_state
from scv.supervision.approval import relayed_verdict

REMEMBERED = 16

# What a job runs: its call, with the job's own cancellation, progress sink and approval answerer.
JobRun = Callable[[Cancellation, Callable[[str], None], Callable[[ApprovalRequest], bool]], Result]
# Queues a report turn whose prompt and origin are built when it starts (None: nothing left).
QueueReport = Callable[[Callable[[], tuple[str, dict[str, Any]] | None]], None]


class Jobs:
    def __init__(self, max_background: int, policy: str, auto_approve: bool, queue_report: QueueReport,
                 on_settle: Callable[[], None] | None = None):
        self.max_background = max_background
        self.policy = policy
        self.auto_approve = auto_approve
        self._queue_report = queue_report
        self._on_settle = on_settle     # told after each job settles (a waiting one-shot client)
        self._ids = itertools.count(1)
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._report_queued = False
        self._threads: list[threading.Thread] = []
        self.closed = False

    # --- starting ----------------------------------------------------------------------------

    def running(self) -> list[Job]:
        with self._lock:
            return [job for job in self._jobs.values() if job.running]

    def check_can_start(self) -> None:
        with self._lock:
            self._check_can_start()

    def _check_can_start(self) -> None:
        if self.closed:
            raise RefusedError("the session is closing; background jobs can no longer start")
        if sum(job.running for job in self._jobs.values()) >= self.max_background:
            raise RefusedError(f"{self.max_background} background jobs are already running, the limit "
                               "(agent.max_background); wait for one with agent_wait, or stop one with agent_cancel")

    def start(self, agent: str, conversation: str | None, run: JobRun) -> Job:
        """Runs an approved call as a job; returns at once. The check and the job's entry are one step,
        so two calls starting jobs at once never both take the last place."""
        with self._lock:
            self._check_can_start()
            job = Job(id=f"job-{next(self._ids)}", agent=agent, conversation=conversation)
            self._jobs[job.id] = job
        thread = threading.Thread(target=self._run, args=(job, run), name=f"scv-{job.id}", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return job

    def _run(self, job: Job, run: JobRun) -> None:
        ok, value = False, {}
        try:
            result = run(job.cancel, lambda line: setattr(job, "progress", line), self.answer_unasked)
            ok, value = result.ok, dict(result.value)
        except Exception as exc:       # a bug here must still settle the job
            value = {"agent": job.agent, "status": "failed", "error": f"the background job failed: {exc}"}
        self._settle(job, ok, value)

    def answer_unasked(self, ask: ApprovalRequest) -> bool:
        """A relayed request inside a job: nobody can be asked, so the session's unasked answer."""
        return relayed_verdict(self.policy, ask, lambda risk: bool(self.auto_approve))

    def _settle(self, job: Job, ok: bool, value: dict[str, Any]) -> None:
        with self._lock:
            job.result = value
            if job.stopped_by_limit is not None and value.get("status") in ("cancelled", "limit"):
                # Stopped by the run's limit (the session's close after it does not make it cancelled).
                if value.get("status") == "cancelled":
                    value.update(status=JobState.LIMIT.value, reply="", limit=job.stopped_by_limit)
                    value["error"] = "stopped: the run's limit was reached while the job ran"
                job.cancel_requested = False
            elif job.cancel_requested:
                value["status"] = JobState.CANCELLED.value
                job.seen = True         # the model asked for the stop: no report follows
            # RUNNING -> its final state (cancelled when asked to stop)
            job.settle(JobState.CANCELLED if job.cancel_requested else final_state(value.get("status"), ok))
            if value.get("session"):
                job.conversation = value["session"]
            job.progress = None
            waiters = list(job.waiters)
            self._forget_old()
            report_now = not job.seen and not self._report_queued and not self.closed
            if report_now:
                self._report_queued = True
        job.done.set()
        job.cancel.close()
        for waiter in waiters:
            waiter.cancel()
        if report_now:
            self._queue_report(self._build_report)
        if self._on_settle is not None:
            self._on_settle()

    def _forget_old(self) -> None:
        # Only seen jobs are forgotten: an unseen one waits for its report turn, then goes.
        finished = sorted((j for j in self._jobs.values() if not j.running), key=lambda j: j.finished)
        for job in finished[: max(0, len(finished) - REMEMBERED)]:
            if job.seen:
                del self._jobs[job.id]

    # --- report turns -------------------------------------------------------------------------

    def _build_report(self) -> tuple[str, dict[str, Any]] | None:
        """Called when the report turn starts: the jobs still unseen then, at most four."""
        with self._lock:
            self._report_queued = False
            unseen = sorted((j for j in self._jobs.values() if not j.running and not j.seen),
                            key=lambda j: j.finished)
            batch, rest = unseen[: report.MAX_JOBS_PER_TURN], unseen[report.MAX_JOBS_PER_TURN:]
            for job in batch:
                job.seen = job.reported = True
            self._forget_old()
            if rest and not self.closed:
                self._report_queued = True
        if rest and not self.closed:
            self._queue_report(self._build_report)
        if not batch:
            return None
        return report.prompt(batch), report.origin(batch)

    # --- the job tools ------------------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
            known = ", ".join(self._jobs) or "none"
        if job is None:
            raise RefusedError(f"no background job {job_id!r} in this session (jobs: {known}); agent_status lists "
                               "them")
        return job

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def describe(self, job: Job) -> dict[str, Any]:
        """The job as the model reads it; a finished job read this way counts as seen."""
        with self._lock:
            if not job.running:
                job.seen = True
            described = job.describe()
            self._forget_old()
            return described

    def wake_on_settle(self, job: Job) -> Cancellation:
        """A cancellation fired when `job` settles (at once if it has); `forget_waiter` it after."""
        waiter = Cancellation()
        with self._lock:
            if job.running:
                job.waiters.append(waiter)
                return waiter
        waiter.cancel()
        return waiter

    def forget_waiter(self, job: Job, waiter: Cancellation) -> None:
        with self._lock:
            if waiter in job.waiters:
                job.waiters.remove(waiter)
        waiter.close()

    def request_cancel(self, job: Job) -> bool:
        """Asks a running job to stop; False when it had already finished."""
        with self._lock:
            if not job.running:
                return False
            # RUNNING (cancel requested): the job's call is cancelled; its worker stops the agent's processes.
            job.cancel_requested = True
            job.cancel.cancel()
            return True

    def stop_at_limit(self, hit: dict[str, Any]) -> None:
        """The run's budget is spent (docs/limits.md): every running job stops and settles as `limit`."""
        with self._lock:
            for job in self._jobs.values():
                if job.running and job.stopped_by_limit is None and not job.cancel_requested:
                    job.stopped_by_limit = hit
                    job.cancel.cancel()

    # --- the session's side -------------------------------------------------------------------

    def outstanding(self) -> bool:
        """Jobs still running, or finished with a result the model has not seen."""
        with self._lock:
            return any(job.running or not job.seen for job in self._jobs.values())

    def close(self) -> None:
        """The session ends: every running job is cancelled and its processes stopped."""
        self.closed = True
        for job in self.running():
            self.request_cancel(job)
        deadline = time.monotonic() + SETTLE_SECONDS
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))


JOB_HANDLE = r"job-[1-9][0-9]{0,8}"


def check_handle(tool: str, job_id: str) -> None:
    if not re.fullmatch(JOB_HANDLE, job_id):
        raise RefusedError(f"{tool} job {job_id!r} is not a job handle; pass one such as job-1 (agent_status lists "
                           "them)")


def find_job(jobs: Jobs | None, job_id: str) -> tuple[Job | None, str | None]:
    """(job, None), or (None, the sentence saying why there is no such job)."""
    if jobs is None or not jobs.all():
        return None, (f"no background job {job_id!r} in this session: no job has been started; an agent call "
                            "with \"background\": true starts one")
    try:
        return jobs.get(job_id), None
    except RefusedError as err:
        return None, str(err)
