"""`agent_status`: one background job, or every job the session remembers: running ones with
their latest progress, finished ones with their result. A finished job described here counts as
seen by the model, so no report turn repeats it."""

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from scv.core.messages import Result
from scv.jobs.manager import check_handle, find_job
from scv.tools.base import Risk, ToolContext, ToolSpec


class AgentStatusArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    job: Annotated[str, Meta(description="One job handle, such as job-1; omit it to list every job.")] | None = None


BACKGROUND_SECTION = (
    "## Working in the background\n"
    "Stay available to the user while delegated work runs. Answer quick things yourself (short reads, lookups, "
    "status checks). Hand real work (changes, multi-step investigation, builds, tests, releases, anything likely "
    "to take more than about a minute) to the `agent` tool with `\"background\": true` and a self-contained brief, "
    "then reply at once with what you started and its job handle. When a turn begins with [SCV background report], "
    "relay what the finished jobs did. Use `agent_status` and `agent_cancel` when the user asks about or wants to "
    "stop a job. Keep `agent_wait`, foreground agent calls and long bash commands for quick results you need "
    "within the turn: they hold the turn open, and the user cannot reach you meanwhile.")


class AgentStatusTool(ToolSpec):
    name = "agent_status"
    description = ("Describe one background agent job (job), or every job this session remembers: running ones with "
                   "their latest progress, finished ones with their result.")
    Args = AgentStatusArgs
    executor = "workers.agent_status:execute"
    declared_risk = Risk.READ_ONLY
    example = {}

    def check(self, args: AgentStatusArgs, ctx: ToolContext) -> None:
        if args.job:
            check_handle(self.name, args.job)

    def summary(self, args: AgentStatusArgs, ctx: ToolContext) -> str:
        return f"describe background job {args.job}" if args.job else "list the background jobs"

    def timeout_seconds(self, args: AgentStatusArgs, ctx: ToolContext) -> float:
        return 30.0

    def worker_args(self, args: AgentStatusArgs, ctx: ToolContext) -> dict[str, Any]:
        jobs = self.services.jobs
        if args.job:
            job, missing = find_job(jobs, args.job)
            return {"single": True, "jobs": [job.describe()] if job else [], "missing": missing}
        return {"single": False, "jobs": [job.describe() for job in jobs.all()] if jobs else [], "missing": None}

    def complete(self, args: AgentStatusArgs, result: Result, ctx: ToolContext) -> dict[str, Any]:
        jobs, value = self.services.jobs, result.value
        if result.ok and jobs is not None:
            shown = [value] if args.job else value.get("jobs", [])
            for item in shown:
                job, _ = find_job(jobs, item.get("job", ""))
                if job is not None and item.get("status") != "running":
                    jobs.describe(job)      # read by the model: no report repeats it
        return value

    def system_prompt_section(self, ctx: ToolContext) -> str | None:
        return BACKGROUND_SECTION
