"""Executor of the `mcp` tools (scv/tools/mcp.py): the factory of the live worker that keeps one
MCP server for a session (its client is workers/mcp/client.py)."""

from typing import Any

from workers.mcp.client import McpClient
from workers.runtime import WorkerContext


def start(args: dict[str, Any], ctx: WorkerContext) -> McpClient:
    """The factory the live worker runtime calls with the server's first call (op `start`)."""
    return McpClient(args, ctx)
