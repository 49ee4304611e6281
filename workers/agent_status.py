"""Executor of `agent_status`: the jobs' descriptions (taken by the supervisor, which holds the
jobs), bounded: each finished job's reply gets an equal share of the call's output limit (at
least MIN_REPLY_BYTES), cut on a character boundary, with `truncated` set where it was cut."""

from workers.runtime import ToolFailure, WorkerContext

MIN_REPLY_BYTES = 512


def _bound(description: dict, limit_bytes: int) -> dict:
    result = description.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("reply"), str):
        return description
    reply = result["reply"]
    if len(reply.encode("utf-8")) <= limit_bytes:
        return description
    cut = reply.encode("utf-8")[:limit_bytes].decode("utf-8", "ignore")
    return {**description, "result": {**result, "reply": cut, "truncated": True}}


def execute(args: dict, ctx: WorkerContext) -> dict:
    if args.get("missing"):
        raise ToolFailure(args["missing"])
    jobs = args["jobs"]
    share = max(MIN_REPLY_BYTES, ctx.call.output_limit_bytes // max(1, len(jobs)))
    bounded = [_bound(job, share) for job in jobs]
    if args["single"]:
        return bounded[0]
    return {"jobs": bounded}
