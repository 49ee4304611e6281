"""Executor of `agent_wait` (and the wait of `agent_cancel`): sleeps on the call's cancellation
token until the session wakes it (the job settled, or the turn was cancelled) or the wait's
time is up. The job's description is added on the supervisor side, which holds the job."""

import select
import time

from workers.running.cancel_token import CancelToken
from workers.runtime import ToolFailure, WorkerContext


def wait_for_wake(token: CancelToken, seconds: float) -> bool:
    """True when woken before `seconds` passed."""
    deadline = time.monotonic() + seconds
    while not token.check():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        select.select(token.fds(), [], [], left)
    return True


def execute(args: dict, ctx: WorkerContext) -> dict:
    if args.get("missing"):
        raise ToolFailure(args["missing"], job=args["job"])
    started = time.monotonic()
    woken = wait_for_wake(ctx.token, float(args["seconds"]))
    return {"job": args["job"], "woken": woken, "waited_seconds": round(time.monotonic() - started, 1)}
