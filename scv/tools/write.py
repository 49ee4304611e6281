"""`write`: create or replace a workspace file atomically."""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from scv.core.errors import RefusedError
from scv.core.paths import names_directory, split_relative
from scv.tools.base import Risk, ToolContext, ToolSpec, short

SHA256_HEX = Meta(pattern="^[0-9a-fA-F]{64}$", description="The file's SHA-256 (hex) as last seen; the write "
                                                          "fails if the file changed since.")


class WriteArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    path: Annotated[str, Meta(description="File path relative to the workspace root.")]
    content: Annotated[str, Meta(description="The whole new content of the file (UTF-8).")]
    mode: Annotated[Literal["create", "replace"], Meta(
        description="create: the file must not exist yet; replace: it must exist.")]
    expected_sha256: Annotated[str, SHA256_HEX] | None = None


class WriteTool(ToolSpec):
    name = "write"
    description = ("Write a whole UTF-8 file in the workspace, atomically. mode create fails if the file exists, "
                   "replace fails if it does not; expected_sha256 guards against overwriting a changed file. "
                   "Missing parent directories are created.")
    Args = WriteArgs
    executor = "workers.write:execute"
    declared_risk = Risk.FILESYSTEM
    example = {"path": "src/main.py", "content": "print(1)\n", "mode": "create"}

    def check(self, args: WriteArgs, ctx: ToolContext) -> None:
        split_relative(args.path)
        if names_directory(args.path):
            # POSIX fails every such write (ENOTDIR on a file, EISDIR otherwise), so it never reaches approval.
            raise RefusedError(f"path {args.path!r} ends with '/', so it names a directory; write writes a file: "
                               "drop the trailing '/'")
        if args.expected_sha256 is not None and args.mode == "create":
            raise RefusedError("expected_sha256 goes with mode replace; a file being created has no earlier content")
        try:
            args.content.encode("utf-8")
        except UnicodeEncodeError:
            raise RefusedError("write content is not valid UTF-8 (it holds an unpaired surrogate)") from None

    def summary(self, args: WriteArgs, ctx: ToolContext) -> str:
        size = len(args.content.encode("utf-8"))
        return f"{args.mode} {args.path} ({size} bytes): {short(args.content, 200)}"

    def worker_args(self, args: WriteArgs, ctx: ToolContext) -> dict:
        return {"parts": split_relative(args.path), "path": args.path, "content": args.content,
                "mode": args.mode, "expected_sha256": args.expected_sha256.lower() if args.expected_sha256 else None}
