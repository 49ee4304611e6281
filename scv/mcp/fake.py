"""A fake `McpServers` (the seam of scv/mcp/servers.py) for tests that need MCP tools without
processes: fixed tool lists per server, canned results, and every call's message recorded.
Its calls still go through the launch (as a live worker's would), so the session's path is real."""

from typing import Any, Callable

from scv.config.mcp import McpServer
from scv.core.messages import Call, Result
from scv.mcp.servers import EXECUTOR, OfferedTool, offered_tools


class _FakeWorker:
    handle = "fake/mcp"

    def __init__(self, answer: Callable[[Call], Result]):
        self.answer = answer

    def alive(self) -> bool:
        return True

    def call(self, message: Call, *, cancel=None, on_progress=None, on_approval=None) -> Result:
        return self.answer(message)


class FakeMcpServers:
    def __init__(self, listed: dict[str, list[dict[str, Any]]],
                 answer: Callable[[Call], Result] = lambda message: Result(ok=True, value={"content": []})):
        self.listed = dict(listed)
        self.worker = _FakeWorker(answer)
        self.sent: list[Call] = []
        self.notes: list[str] = []
        self.generation = 0
        self.started = self.closed = False

    def _config(self, name: str) -> McpServer:
        return McpServer(name=name, argv=["fake"], env={}, startup_timeout_seconds=1.0, required=False, tools=None,
                         risk=None)

    def change(self, server: str, tools: list[dict[str, Any]]) -> None:
        """What a server's notifications/tools/list_changed and the next tools/list would bring."""
        self.listed[server] = tools
        self.generation += 1

    def start(self) -> None:
        self.started = True

    def offer(self) -> tuple[int, list[OfferedTool]]:
        tools = [tool for name, listed in self.listed.items()
                 for tool in offered_tools(self._config(name), listed, self.notes.append)]
        return self.generation, tools

    def call(self, tool: OfferedTool, arguments: dict[str, Any], launch: Any) -> Result:
        message = launch.message(EXECUTOR, {"op": "call", "tool": tool.tool, "arguments": arguments},
                                 handle=self.worker.handle)
        self.sent.append(message)
        return launch.live(self.worker, message)

    def close(self) -> None:
        self.closed = True
