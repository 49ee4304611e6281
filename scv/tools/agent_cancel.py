"""`agent_cancel`: stops a running background job. Its call is cancelled, which stops the
agent's process group and everything tagged with it, exactly as closing the session would; the
call then waits (in its worker, woken when the job settles) up to CANCEL_WAIT_SECONDS and
returns the job with status `cancelled`. No report turn follows: the model asked for the stop.
A job that had already finished is described with a note. Process risk: the approval policy
decides it like `bash`."""

import contextlib
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from scv.jobs.manager import check_handle, find_job
from scv.jobs.wake import until_settled
from scv.tools.agent_wait import jobs_enabled
from scv.tools.base import Risk, ToolContext, ToolSpec

CANCEL_WAIT_SECONDS = 10


class AgentCancelArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    job: Annotated[str, Meta(description="The job handle to stop, such as job-1.")]


class AgentCancelTool(ToolSpec):
    name = "agent_cancel"
    description = ("Stop a running background agent job: its agent and every process it started are stopped. "
                   "Returns the job with status cancelled; a job that already finished is described with a note.")
    Args = AgentCancelArgs
    executor = "workers.agent_cancel:execute"
    declared_risk = Risk.PROCESS
    example = {"job": "job-1"}

    def __init__(self):
        self._stopped: dict[int, bool] = {}     # calls between listen() and complete(): did this one stop it

    def enabled(self, ctx: ToolContext) -> bool:
        return jobs_enabled(ctx)

    def check(self, args: AgentCancelArgs, ctx: ToolContext) -> None:
        check_handle(self.name, args.job)

    def summary(self, args: AgentCancelArgs, ctx: ToolContext) -> str:
        _, job, _ = find_job(ctx, args.job)
        agent = f" (agent {job.agent})" if job is not None else ""
        return f"stop background job {args.job}{agent} and every process it started"

    def timeout_seconds(self, args: AgentCancelArgs, ctx: ToolContext) -> float:
        return CANCEL_WAIT_SECONDS + 5.0

    def worker_args(self, args: AgentCancelArgs, ctx: ToolContext) -> dict[str, Any]:
        _, _, missing = find_job(ctx, args.job)
        return {"job": args.job, "seconds": CANCEL_WAIT_SECONDS, "missing": missing}

    @contextlib.contextmanager
    def listen(self, args: AgentCancelArgs, ctx: ToolContext, cancel: Any):
        jobs, job, _ = find_job(ctx, args.job)
        if job is None:
            yield cancel
            return
        # Approved and running: the stop is requested now, and the worker waits for the job to settle.
        self._stopped[id(args)] = jobs.request_cancel(job)
        with until_settled(jobs, job, cancel) as merged:
            yield merged

    def complete(self, args: AgentCancelArgs, ok: bool, value: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        jobs, job, _ = find_job(ctx, args.job)
        if job is None:
            return value
        described = jobs.describe(job)
        if not self._stopped.pop(id(args), False):
            described["note"] = f"{job.id} had already finished ({job.status}); nothing was stopped"
        elif job.running:
            described["status"] = "cancelled"
            described["note"] = (f"{job.id} was told to stop and has not settled after {CANCEL_WAIT_SECONDS} s; its "
                                 "processes are being killed")
        return described
