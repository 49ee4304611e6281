"""Executor of `agent_status`: the jobs' descriptions (taken by the supervisor, which holds the
jobs) bounded to the call's output limit: each reply is cut on a character boundary so the whole
answer stays within it, with `truncated` set on the results that were cut."""

from workers.runtime import ToolFailure, WorkerContext

MIN_REPLY_CHARS = 512


def _bound(description: dict, limit_chars: int) -> dict:
    result = description.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("reply"), str):
        return description
    reply = result["reply"]
    if len(reply.encode("utf-8")) <= limit_chars:
        return description
    cut = reply.encode("utf-8")[:limit_chars].decode("utf-8", "ignore")
    return {**description, "result": {**result, "reply": cut, "truncated": True}}


def execute(args: dict, ctx: WorkerContext) -> dict:
    if args.get("missing"):
        raise ToolFailure(args["missing"])
    jobs = args["jobs"]
    share = max(MIN_REPLY_CHARS, ctx.call.output_limit_bytes // max(1, len(jobs)))
    bounded = [_bound(job, share) for job in jobs]
    if args["single"]:
        return bounded[0]
    return {"jobs": bounded}
