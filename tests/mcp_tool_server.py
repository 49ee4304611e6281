"""A small MCP server on stdio, written with the official `mcp` SDK (FastMCP), that the tests
give to `scv exec` as a server it uses as tools.

    python tests/mcp_tool_server.py [--mark DIR] [--crash-at-start] [--slow-start SECONDS]

Tools: `echo` (read-only), `slow` (reports progress `steps` times, then waits until cancelled,
noting `started` and `cancelled` in DIR), `fail` (an error result), `crash` (the process exits),
`big` (`size` bytes of text), `grow` (adds the tool `extra` and says the list changed),
`environment` (the value of one variable), `picture` (an image and text), `touch` (writes a file),
`trace` (the traceparent and tracestate of its `_meta`). `--crash-at-start` exits before serving,
with a line on stderr; `--slow-start` waits before serving."""

import argparse
import asyncio
import os
import sys
from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP, Image
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--mark", default=None)
parser.add_argument("--crash-at-start", action="store_true")
parser.add_argument("--slow-start", type=float, default=0.0)
options = parser.parse_args()

server = FastMCP("scv-test-tools")


def mark(name: str, text: str = "") -> None:
    if options.mark:
        path = Path(options.mark) / name
        path.write_text(path.read_text() + text + "\n" if path.exists() else text + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    mark("echo", text)
    return f"echo: {text}"


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress `steps` times, then wait until cancelled."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, message=f"step {step} of {steps}")
    mark("started", str(os.getpid()))
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        mark("cancelled", "yes")
        raise
    return "never"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ValueError(f"it failed because {reason}")


@server.tool()
def crash() -> str:
    """The server process exits in the middle of the call."""
    print("about to crash on purpose", file=sys.stderr, flush=True)
    mark("crashed", str(os.getpid()))
    os._exit(3)


@server.tool()
def picture() -> list:
    """A small PNG and a line of text."""
    return [Image(data=b"\x89PNG\r\n\x1a\n" + bytes(1000), format="png"), "a picture"]


@server.tool()
def big(size: int) -> str:
    """Text of `size` bytes."""
    return "x" * size


@server.tool()
def environment(name: str) -> str:
    """The value of the environment variable `name`, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def trace(ctx: Context) -> str:
    """The traceparent and tracestate of the call's `_meta` (noted in DIR as `trace`), or <none>."""
    meta = ctx.request_context.meta
    extra = (meta.model_extra or {}) if meta is not None else {}
    seen = f"{extra.get('traceparent', '<none>')} {extra.get('tracestate', '<none>')}"
    mark("trace", seen)
    return seen


@server.tool()
def touch(path: str) -> str:
    """Writes a line to the file `path`: "written", or why not."""
    try:
        with open(path, "w") as fh:
            fh.write("touched\n")
    except OSError as err:
        return f"refused: {err.strerror}"
    return "written"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and tells the client the tool list changed."""
    server.add_tool(lambda: "extra here", name="extra", description="Added by grow.")
    await ctx.session.send_tool_list_changed()
    return "grown"


if options.crash_at_start:
    print("cannot reach the database at db.invalid", file=sys.stderr, flush=True)
    sys.exit(1)
if options.slow_start:
    import time
    time.sleep(options.slow_start)
server.run("stdio")
