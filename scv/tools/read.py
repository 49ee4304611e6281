"""`read`: a byte range of a workspace file, as UTF-8 text."""

from typing import Annotated

import msgspec
from msgspec import Meta

from scv.core.paths import is_secret_like, names_directory, split_relative
from scv.tools.base import Risk, ToolContext, ToolSpec


class ReadArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    path: Annotated[str, Meta(description="File path relative to the workspace root.")]
    offset: Annotated[int, Meta(ge=0, description="First byte to read (default 0).")] = 0
    limit: Annotated[int, Meta(ge=1, description="Most bytes to return (default and ceiling: "
                                                  "tools.output_limit_bytes).")] | None = None


class ReadTool(ToolSpec):
    name = "read"
    description = ("Read a UTF-8 text file in the workspace, optionally a byte range of it. Returns the content, "
                   "the file's total size in bytes and whether the content was truncated.")
    Args = ReadArgs
    executor = "workers.read:execute"
    declared_risk = Risk.READ_ONLY
    example = {"path": "src/main.py", "offset": 0, "limit": 65536}

    def check(self, args: ReadArgs, ctx: ToolContext) -> None:
        split_relative(args.path)

    def risk(self, args: ReadArgs, ctx: ToolContext) -> Risk:
        return Risk.FILESYSTEM if is_secret_like(split_relative(args.path)) else Risk.READ_ONLY

    def summary(self, args: ReadArgs, ctx: ToolContext) -> str:
        note = " (the name looks like it holds secrets)" if self.risk(args, ctx) is not Risk.READ_ONLY else ""
        return f"read {args.path}{note}"

    def worker_args(self, args: ReadArgs, ctx: ToolContext) -> dict:
        ceiling = ctx.config.tools.output_limit_bytes
        limit = min(args.limit or ceiling, ceiling)
        return {"parts": split_relative(args.path), "path": args.path, "offset": args.offset, "limit": limit,
                "directory": names_directory(args.path)}
