"""Executor of `agent_cancel`: the stop itself is requested on the supervisor side, which holds
the job; this worker waits (up to the given seconds) for the session to wake it when the job
has settled, like `agent_wait`."""

import time

from workers.agent_wait import wait_for_wake
from workers.runtime import ToolFailure, WorkerContext


def execute(args: dict, ctx: WorkerContext) -> dict:
    if args.get("missing"):
        raise ToolFailure(args["missing"], job=args["job"])
    started = time.monotonic()
    settled = wait_for_wake(ctx.token, float(args["seconds"]))
    return {"job": args["job"], "settled": settled, "waited_seconds": round(time.monotonic() - started, 1)}
