"""Executor of `bash`: `/bin/bash -lc COMMAND` in the workspace through the process runner."""

import os

from scv.core import traceparent
from workers.output_buffer import HeadTail
from workers.running import process_runner
from workers.runtime import ToolFailure, WorkerContext
from workers.sandbox_call import SandboxedRun, SandboxError


def execute(args: dict, ctx: WorkerContext) -> dict:
    try:
        with SandboxedRun(ctx.options.get("sandbox"), ctx.after_result) as sandbox:
            return _run(args, ctx, sandbox)
    except SandboxError as err:
        raise ToolFailure(f"{err}; the command did not run") from None


def _run(args: dict, ctx: WorkerContext, sandbox: SandboxedRun) -> dict:
    call = ctx.call
    launcher = sandbox.launcher.spawn if sandbox.launcher is not None else None
    env = dict(os.environ)
    traceparent.apply_options(env, ctx.options)     # the command's parent is this call's span
    spec = process_runner.RunSpec(argv=["/bin/bash", "-lc", args["command"]], cwd=call.workspace,
                                  env=sandbox.environment(env), timeout_seconds=call.timeout_seconds,
                                  tag=call.handle, chunk_views=True, launcher=launcher)
    output = HeadTail(call.output_limit_bytes)
    try:
        outcome = process_runner.run(spec, ctx.token, output.feed)
    except OSError as err:
        raise ToolFailure(f"/bin/bash could not be started: {err.strerror}") from None
    text = output.text()
    result = {"exit_code": outcome.exit_code, "signal": outcome.signal, "output": text,
              "output_bytes": output.total, "truncated": output.truncated, "timed_out": outcome.timed_out}
    confined = sandbox.field(text)
    if confined is not None:
        result["sandbox"] = confined
    if outcome.cancelled:
        result["cancelled"] = True
    if outcome.stopped_descendants:
        result["stopped_descendants"] = outcome.stopped_descendants
    if outcome.timed_out:
        raise ToolFailure(f"the command timed out after {call.timeout_seconds:g} s and was killed", **result)
    if outcome.cancelled:
        raise ToolFailure("the command was cancelled and its processes stopped", **result)
    if outcome.signal:
        raise ToolFailure(f"the command was killed by {outcome.signal}", **result)
    if outcome.exit_code != 0:
        raise ToolFailure(f"the command exited with status {outcome.exit_code}", **result)
    return result
