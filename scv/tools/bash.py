"""`bash`: one command through `/bin/bash -lc` in the workspace."""

from typing import Annotated

import msgspec
from msgspec import Meta

from scv.core.errors import RefusedError
from scv.core.sandbox.policy import label
from scv.tools.base import Risk, ToolContext, ToolSpec, set_maximum, short

SANDBOXED = ("Sandboxed ({mode}): it writes only {where}, reads nothing in the user's credential folders, and "
             "{network}; a refused write or connection fails with Permission denied.")


class BashArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    command: Annotated[str, Meta(min_length=1, description="The command, run by /bin/bash -lc in the workspace.")]
    timeout_seconds: Annotated[int, Meta(ge=1, description=(
        "Seconds before the command is killed (default tools.command_timeout_seconds)."))] | None = None


class BashTool(ToolSpec):
    name = "bash"
    description = ("Run a shell command with /bin/bash -lc in the workspace, stdin empty. Returns exit_code, "
                   "signal, combined stdout and stderr (bounded: head and tail kept), output_bytes, truncated and "
                   "timed_out. Processes it leaves running are stopped when it ends. Not sandboxed.")
    Args = BashArgs
    executor = "workers.bash:execute"
    declared_risk = Risk.PROCESS
    example = {"command": "pytest -q", "timeout_seconds": 900}
    call_modules = ("scv.sandbox.choose",)

    def check(self, args: BashArgs, ctx: ToolContext) -> None:
        if "\x00" in args.command:
            raise RefusedError("bash command contains a NUL byte; remove it")
        ceiling = ctx.config.tools.max_timeout_seconds
        if args.timeout_seconds is not None and args.timeout_seconds > ceiling:
            raise RefusedError(f"bash timeout_seconds {args.timeout_seconds} is over the ceiling of {ceiling} "
                               "seconds (tools.max_timeout_seconds); ask for at most that")
        from scv.sandbox.choose import request_for
        request_for(ctx.config, ctx.workspace)      # refuses a sandbox this kernel cannot give

    def summary(self, args: BashArgs, ctx: ToolContext) -> str:
        from scv.sandbox.choose import request_for
        text = f"run `{short(args.command)}` (timeout {int(self.timeout_seconds(args, ctx))} s)"
        request = request_for(ctx.config, ctx.workspace)
        return f"{text}; {label(request)}" if request is not None else text

    def options(self, ctx: ToolContext) -> dict:
        from scv.sandbox.choose import plan_for
        plan = plan_for(ctx.config, ctx.workspace)
        return {"sandbox": msgspec.to_builtins(plan)} if plan is not None else {}

    def describe(self, ctx: ToolContext) -> dict:
        described = super().describe(ctx)
        mode, network = ctx.config.tools.sandbox, ctx.config.tools.sandbox_network
        if mode != "off":
            where = ("inside the workspace, its private $TMPDIR and the extra folders the user allowed"
                     if mode == "workspace-write" else "its private $TMPDIR")
            described["description"] = described["description"].replace("Not sandboxed.", SANDBOXED.format(
                mode=mode, where=where, network="may use the network" if network else "has no network (no DNS either)"))
        described["sandbox"] = {"mode": mode, "network": network}
        return described

    def timeout_seconds(self, args: BashArgs, ctx: ToolContext) -> float:
        return float(args.timeout_seconds or ctx.config.tools.command_timeout_seconds)

    def schema(self, ctx: ToolContext) -> dict:
        schema = super().schema(ctx)
        set_maximum(schema, "timeout_seconds", ctx.config.tools.max_timeout_seconds)
        return schema
