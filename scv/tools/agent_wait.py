"""`agent_wait`: waits for a background job to finish, or for the timeout.

The waiting happens in the call's worker, which sleeps on its cancellation token; the session
wakes it when the job settles (see scv/jobs/wake.py), so the turn's cancellation, the deadline
and the supervisor's backstop apply to the wait as to any call. The result is the job as the
model reads it: finished with its result, or still running with its latest progress line.
"""

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from scv.core.errors import RefusedError
from scv.core.messages import Result
from scv.jobs.manager import check_handle, find_job
from scv.jobs.wake import until_settled
from scv.tools.base import Launch, Risk, ToolContext, ToolSpec, set_maximum

WAKE_MARGIN_SECONDS = 5.0      # the call's deadline lies past the wait itself


class AgentWaitArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    job: Annotated[str, Meta(description="The job handle an agent call with background returned, such as job-1.")]
    timeout_seconds: Annotated[int, Meta(ge=1, description=(
        "Longest wait in seconds (default tools.agent_timeout_seconds); the job keeps running after it."
    ))] | None = None


class AgentWaitTool(ToolSpec):
    name = "agent_wait"
    description = ("Wait until a background agent job finishes (or the timeout passes) and return it: job, agent, "
                   "status, elapsed_seconds and result, or status running with its latest progress. It holds the "
                   "turn open, so use it only for a result you need within this turn.")
    Args = AgentWaitArgs
    executor = "workers.agent_wait:execute"
    declared_risk = Risk.READ_ONLY
    example = {"job": "job-1", "timeout_seconds": 60}

    def schema(self, ctx: ToolContext) -> dict[str, Any]:
        schema = super().schema(ctx)
        set_maximum(schema, "timeout_seconds", ctx.config.tools.max_timeout_seconds)
        return schema

    def _seconds(self, args: AgentWaitArgs, ctx: ToolContext) -> int:
        tools = ctx.config.tools
        # The default is the agent timeout, but no wait runs past the ceiling.
        return min(args.timeout_seconds or tools.agent_timeout_seconds, tools.max_timeout_seconds)

    def check(self, args: AgentWaitArgs, ctx: ToolContext) -> None:
        ceiling = ctx.config.tools.max_timeout_seconds
        if args.timeout_seconds is not None and args.timeout_seconds > ceiling:
            raise RefusedError(f"agent_wait timeout_seconds {args.timeout_seconds} is over the ceiling of {ceiling} "
                               "seconds (tools.max_timeout_seconds); ask for at most that")
        check_handle(self.name, args.job)

    def summary(self, args: AgentWaitArgs, ctx: ToolContext) -> str:
        return f"wait up to {self._seconds(args, ctx)} s for background job {args.job}"

    def timeout_seconds(self, args: AgentWaitArgs, ctx: ToolContext) -> float:
        return self._seconds(args, ctx) + WAKE_MARGIN_SECONDS

    def worker_args(self, args: AgentWaitArgs, ctx: ToolContext) -> dict[str, Any]:
        _, missing = find_job(self.services.jobs, args.job)
        return {"job": args.job, "seconds": self._seconds(args, ctx), "missing": missing}

    def run(self, args: AgentWaitArgs, ctx: ToolContext, launch: Launch) -> Result:
        jobs = self.services.jobs
        job, _ = find_job(jobs, args.job)
        message = launch.message(self.executor, self.worker_args(args, ctx))
        if job is None:
            return launch.fresh(message)
        # The worker sleeps on its cancellation, which fires when the job settles (or the turn is cancelled).
        with until_settled(jobs, job, launch.cancel) as merged:
            return launch.fresh(message, cancel=merged)

    def complete(self, args: AgentWaitArgs, result: Result, ctx: ToolContext) -> dict[str, Any]:
        job, _ = find_job(self.services.jobs, args.job)
        return self.services.jobs.describe(job) if job is not None else result.value
