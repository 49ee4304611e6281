"""A test-only tool whose executor sends many progress lines quickly (for throttling tests).
Not registered in BUILTIN; tests register it in one session's registry."""

import os
import time

import msgspec

from scv.tools.base import Risk, ToolSpec


class ProgressArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    lines: int = 40
    gap_seconds: float = 0.025
    wait_for_file: str | None = None    # after the lines, wait (up to 20 s) for this file to appear


class ProgressTool(ToolSpec):
    name = "chatter"
    description = "Sends progress lines (tests only)."
    Args = ProgressArgs
    executor = "tests.progress_tool:execute"
    declared_risk = Risk.READ_ONLY

    def summary(self, args, ctx) -> str:
        return f"send {args.lines} progress lines"

    def system_prompt_section(self, ctx) -> str:
        return "## Chatter\nThe chatter tool only talks."


def execute(args: dict, ctx) -> dict:
    for index in range(args["lines"]):
        ctx.progress(f"line {index}")
        time.sleep(args["gap_seconds"])
    if args.get("wait_for_file") is None:
        return {"sent": args["lines"]}
    deadline = time.monotonic() + 20
    while not os.path.exists(args["wait_for_file"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"sent": args["lines"], "file_appeared": os.path.exists(args["wait_for_file"])}
