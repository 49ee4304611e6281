"""A session's background jobs (kept in `ctx.session_state["jobs"]`).

A job is an `agent` call that was validated and approved in the foreground, then runs in its
own worker on a thread of its own, through a ToolRunner of its own so it never waits for the
session's foreground calls (nor they for it). At most `agent.max_background` run at once; the
16 newest finished jobs are remembered. A finished job whose result the model has not seen is
reported in a turn the session starts itself once idle (up to four jobs a turn). Closing the
session cancels every running job, which stops its processes.

Approvals a nested agent relays from inside a job get what the session would answer without
asking anyone: the policy's own verdict, else the client's declared auto-approval, else a denial.
"""

import itertools
import re
import threading
import time
from typing import Any

import msgspec

from scv.approval import Verdict, policy_verdict
from scv.cancellation import Cancellation
from scv.errors import RefusedError
from scv.jobs import report
from scv.jobs.job import CANCELLED, Job
from scv.messages import ApprovalRequest
from scv.stopping import SETTLE_SECONDS
from scv.tools.base import Risk, ToolContext

STATE_KEY = "jobs"
REMEMBERED = 16


class Jobs:
    def __init__(self, session: Any, max_background: int):
        self.session = session
        self.max_background = max_background
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
        if self.closed:
            raise RefusedError("the session is closing; background jobs can no longer start")
        if len(self.running()) >= self.max_background:
            raise RefusedError(f"{self.max_background} background jobs are already running, the limit "
                               "(agent.max_background); wait for one with agent_wait, or stop one with agent_cancel")

    def start(self, spec: Any, args: msgspec.Struct, runner: Any, agent: str, conversation: str | None) -> Job:
        """Runs an approved agent call as a job; returns at once."""
        from scv.calls import PreparedCall     # late: scv.calls imports the tool registry
        self.check_can_start()
        job = Job(id=f"job-{next(self._ids)}", agent=agent, conversation=conversation)
        # The job's own runner, so the job and the session's foreground calls never wait for each other.
        own = type(runner)(runner.supervisor, runner.registry, runner.ctx, runner.approver)
        # The same call, run in the foreground of the job's thread.
        args = msgspec.structs.replace(args, background=False)
        foreground = PreparedCall(spec, args, spec.risk(args, runner.ctx), spec.summary(args, runner.ctx))
        with self._lock:
            self._jobs[job.id] = job
        thread = threading.Thread(target=self._run, args=(job, own, foreground), name=f"scv-{job.id}", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return job

    def _run(self, job: Job, runner: Any, prepared: Any) -> None:
        ok, value = False, {}
        try:
            result = runner.run(prepared, cancel=job.cancel, on_progress=lambda line: setattr(job, "progress", line),
                                on_approval=self._approval)
            ok, value = result.ok, result.value
        except Exception as exc:       # a bug here must still settle the job
            value = {"agent": job.agent, "status": "failed", "error": f"the background job failed: {exc}"}
        self._settle(job, ok, value)

    def _approval(self, ask: ApprovalRequest) -> bool:
        try:
            risk = Risk(ask.risk)
        except ValueError:
            risk = Risk.DELEGATE
        verdict = policy_verdict(self.session.ctx.config.tools.approval_policy, risk)
        if verdict is not Verdict.ASK:
            return verdict is Verdict.RUN
        return bool(self.session.auto_approve)

    def _settle(self, job: Job, ok: bool, value: dict[str, Any]) -> None:
        with self._lock:
            # RUNNING -> its final status (cancelled when asked to stop)
            job.result = value
            job.status = CANCELLED if job.cancel_requested else str(value.get("status") or
                                                                    ("completed" if ok else "failed"))
            if job.cancel_requested:
                value["status"] = CANCELLED
                job.seen = True         # the model asked for the stop: no report follows
            if value.get("session"):
                job.conversation = value["session"]
            job.finished = time.monotonic()
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
            self.session.queue_report(self._build_report)

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
            self.session.queue_report(self._build_report)
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
            # RUNNING -> CANCELLING: the job's call is cancelled; its worker stops the agent's processes.
            job.cancel_requested = True
            job.cancel.cancel()
            return True

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


def jobs_of(ctx: ToolContext) -> Jobs:
    """The session's jobs; raises RefusedError outside a session or when jobs are off."""
    jobs = ctx.session_state.get(STATE_KEY)
    if jobs is not None:
        return jobs
    limit = ctx.config.agent.max_background
    if limit <= 0:
        raise RefusedError("background jobs are off (agent.max_background = 0); run the agent call without "
                           "background")
    session = ctx.session_state.get("scv.session")
    if session is None:
        raise RefusedError("background jobs belong to a session (scv exec or scv server --stdio) and there is "
                           "none here; run the agent call without background")
    jobs = Jobs(session, limit)
    ctx.session_state[STATE_KEY] = jobs
    session.add_hold(jobs.outstanding)
    session.add_close_hook(jobs.close)
    return jobs


JOB_HANDLE = re.compile(r"job-[1-9][0-9]{0,8}")


def check_handle(tool: str, job_id: str) -> None:
    if not JOB_HANDLE.fullmatch(job_id):
        raise RefusedError(f"{tool} job {job_id!r} is not a job handle; pass one such as job-1 (agent_status lists "
                           "them)")


def find_job(ctx: ToolContext, job_id: str) -> tuple[Jobs | None, Job | None, str | None]:
    """(jobs, job, None), or (jobs or None, None, the sentence saying why there is no such job)."""
    jobs = ctx.session_state.get(STATE_KEY)
    if jobs is None:
        return None, None, (f"no background job {job_id!r} in this session: no job has been started; an agent call "
                            "with \"background\": true starts one")
    try:
        return jobs, jobs.get(job_id), None
    except RefusedError as err:
        return jobs, None, str(err)
