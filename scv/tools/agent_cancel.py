"""`agent_cancel`: stops a running background job. Its call is cancelled, which stops the
agent's process group and everything tagged with it, exactly as closing the session would; the
call then waits (in its worker, woken when the job settles) up to CANCEL_WAIT_SECONDS and
returns the job with status `cancelled`. No report turn follows: the model asked for the stop.
A job that had already finished is described with a note. Process risk: the approval policy
decides it like `bash`."""

from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from scv.core.messages import Result
from scv.jobs.manager import check_handle, find_job
from scv.jobs.wake import until_settled
from scv.tools.base import Launch, Risk, ToolContext, ToolSpec

CANCEL_WAIT_SECONDS = 10


class AgentCancelArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    job: Annotated[str, Meta(description="The job handle to stop, such as job-1.")]


@dataclass
class CancelCall:
    """One agent_cancel call: its arguments, and whether this call is what stopped the job."""
    args: AgentCancelArgs
    stopped: bool = False


class AgentCancelTool(ToolSpec):
    name = "agent_cancel"
    description = ("Stop a running background agent job: its agent and every process it started are stopped. "
                   "Returns the job with status cancelled; a job that already finished is described with a note.")
    Args = AgentCancelArgs
    executor = "workers.agent_cancel:execute"
    declared_risk = Risk.PROCESS
    example = {"job": "job-1"}

    def prepare(self, args: AgentCancelArgs, ctx: ToolContext) -> CancelCall:
        check_handle(self.name, args.job)
        return CancelCall(args)

    def summary(self, call: CancelCall, ctx: ToolContext) -> str:
        job, _ = find_job(self.services.jobs, call.args.job)
        agent = f" (agent {job.agent})" if job is not None else ""
        return f"stop background job {call.args.job}{agent} and every process it started"

    def timeout_seconds(self, call: CancelCall, ctx: ToolContext) -> float:
        return CANCEL_WAIT_SECONDS + 5.0

    def worker_args(self, call: CancelCall, ctx: ToolContext) -> dict[str, Any]:
        _, missing = find_job(self.services.jobs, call.args.job)
        return {"job": call.args.job, "seconds": CANCEL_WAIT_SECONDS, "missing": missing}

    def run(self, call: CancelCall, ctx: ToolContext, launch: Launch) -> Result:
        jobs = self.services.jobs
        job, _ = find_job(jobs, call.args.job)
        message = launch.message(self.executor, self.worker_args(call, ctx))
        if job is None:
            return launch.fresh(message)
        # Approved and running: the stop is requested now, and the worker waits for the job to settle.
        call.stopped = jobs.request_cancel(job)
        with until_settled(jobs, job, launch.cancel) as merged:
            return launch.fresh(message, cancel=merged)

    def complete(self, call: CancelCall, result: Result, ctx: ToolContext) -> dict[str, Any]:
        jobs = self.services.jobs
        job, _ = find_job(jobs, call.args.job)
        if job is None:
            return result.value
        described = jobs.describe(job)
        if not call.stopped:
            described["note"] = f"{job.id} had already finished ({job.status}); nothing was stopped"
        elif job.running:
            described["status"] = "cancelled"
            described["note"] = (f"{job.id} was told to stop and has not settled after {CANCEL_WAIT_SECONDS} s; its "
                                 "processes are being killed")
        return described
