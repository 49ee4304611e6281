"""The seam between a session and the MCP servers it uses as tools (`McpServers`), and the real
one: each server in a live worker of its own (workers/mcp/client.py), kept for the whole session like a
live agent's conversation, and closed with the session.

```
        start ok                       crash (call fails)          restart fails / 2nd crash
NEW ──────────▶ UP ──────────────────▶ DOWN ──next call: restart──▶ UP          ──▶ OUT
 └─start fails (optional)─▶ OUT        (its tools stay offered)                (tools leave the offer)
 └─start fails (required)─▶ the run ends, exit 2
```

Before each model request `offer()` asks every UP server's worker whether its tool list changed
(`notifications/tools/list_changed`), so a new list and a server that left are seen by the model
at its next request. Tool names are `mcp__<server>__<tool>`; a tool whose name or schema cannot
be offered is left out with a stderr note.
"""

import enum
import os
import re
import sys
import threading
from typing import Any, Callable, Protocol

import msgspec

from scv.config.mcp import McpServer
from scv.core import events as ev
from scv.core.cancellation import Cancellation
from scv.core.errors import ScvError, WorkerLost
from scv.core.mcp_wire import ERROR_TYPE, REQUEST_ID
from scv.core.messages import Call, Result
from scv.core.states import Moves
from scv.core.traceparent import to_options
from scv.telemetry.spans import NO_SPAN, Span

FULL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
EXECUTOR = "workers.mcp:start"
# A worker's own clock ends its operations first; the supervisor's is a backstop past it.
BACKSTOP_SECONDS = 5.0


class McpStartError(ScvError):
    """A required MCP server did not start: the run ends before the model runs."""

    exit_code = 2


class OfferedTool(msgspec.Struct, frozen=True):
    """One MCP tool as the session offers it."""
    name: str               # mcp__<server>__<tool>
    server: str
    tool: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    risk: str | None        # the server's `risk` setting, which overrides the hint


class McpServers(Protocol):
    def start(self) -> None:
        """Starts every server and waits for its tool list; McpStartError for a required one."""

    def offer(self) -> tuple[int, list[OfferedTool]]:
        """The tools to offer now and a number that changes whenever they do."""

    def call(self, tool: OfferedTool, arguments: dict[str, Any], launch: Any) -> Result:
        """Runs one approved call through `launch` (scv/tools/base.py Launch)."""

    def close(self) -> None:
        """Stops every server and everything it started."""


class ServerState(enum.Enum):
    NEW = "new"
    UP = "up"
    DOWN = "down"       # crashed once: restarted at its next call
    OUT = "out"         # left out for the rest of the session


SERVER_MOVES = Moves({ServerState.NEW: {ServerState.UP, ServerState.OUT},
                      ServerState.UP: {ServerState.DOWN, ServerState.OUT},
                      ServerState.DOWN: {ServerState.UP, ServerState.OUT},
                      ServerState.OUT: set()})


class _Server:
    def __init__(self, config: McpServer):
        self.config = config
        self.state = ServerState.NEW
        self.worker: Any = None         # its LiveWorker while UP
        self.tools: list[OfferedTool] = []
        self.restarted = False          # its one restart is used
        self.protocol = ""              # the revision its initialize answer named
        self.lock = threading.Lock()

    def move(self, to: ServerState) -> None:
        """The one transition function (the moves are SERVER_MOVES)."""
        self.state = SERVER_MOVES.check(f"MCP server {self.config.name}", self.state, to)


def offered_tools(server: McpServer, listed: list[dict[str, Any]], note: Callable[[str], None]) -> list[OfferedTool]:
    """The listed tools SCV can offer: allowed, named within the model's rules, with an object
    schema that is itself valid; each one left out is noted."""
    from jsonschema import Draft202012Validator, SchemaError     # only in sessions that use MCP servers
    kept = []
    for entry in listed:
        tool = entry.get("name", "")
        if server.tools is not None and tool not in server.tools:
            continue
        name = f"mcp__{server.name}__{tool}"
        schema = entry.get("input_schema")
        if not FULL_NAME.fullmatch(name):
            note(f"the MCP server {server.name}'s tool {tool!r} is left out: {name!r} is not a tool name a model "
                 "accepts (1-64 of A-Z, a-z, 0-9, _ and -)")
            continue
        if not isinstance(schema, dict) or schema.get("type") != "object":
            note(f"the MCP server {server.name}'s tool {tool!r} is left out: its input schema is not an object schema")
            continue
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as err:
            note(f"the MCP server {server.name}'s tool {tool!r} is left out: its input schema is invalid "
                 f"({err.message})")
            continue
        if any(t.name == name for t in kept):
            note(f"the MCP server {server.name}'s tool {tool!r} is left out: it is listed twice")
            continue
        kept.append(OfferedTool(name=name, server=server.name, tool=tool, description=entry.get("description") or "",
                                schema=schema, read_only=bool(entry.get("read_only")), risk=server.risk))
    return kept


def _traced(span: Any, server: _Server, tool: OfferedTool, value: dict[str, Any]) -> None:
    """The MCP client keys of the conventions on the call's `execute_tool` span (which they say to
    use rather than a second span; its context went to the server as `_meta.traceparent`), and
    the result's keys for the span taken out of it."""
    request_id, error_type = value.pop(REQUEST_ID, None), value.pop(ERROR_TYPE, None)
    if span.recording:
        span.set({"mcp.method.name": "tools/call", "mcp.protocol.version": server.protocol or None,
                  "network.transport": "pipe", "jsonrpc.request.id": request_id, "error.type": error_type,
                  "rpc.response.status_code": error_type if error_type not in (None, "tool_error") else None,
                  "scv.mcp.server": tool.server, "scv.mcp.tool": tool.tool})


def _failure(text: str, **fields: Any) -> Result:
    return Result(ok=False, value={**fields, "error": text})


class LiveMcpServers:
    """The real seam: `supervisor` starts the live workers, `ctx` is the session's ToolContext."""

    def __init__(self, supervisor: Any, servers: dict[str, McpServer], ctx: Any, emit: ev.EventSink,
                 note: Callable[[str], None] | None = None, home: str | None = None, trace: Span = NO_SPAN):
        from scv.config.load import scv_home
        self._supervisor = supervisor
        self._servers = {name: _Server(config) for name, config in servers.items()}
        self._ctx = ctx
        self._emit = emit
        self._note = note or (lambda line: print(f"scv: {line}", file=sys.stderr, flush=True))
        self._home = home or str(scv_home())
        self._trace = trace         # the run's span: each server process's TRACEPARENT
        self._session = f"mcp{os.urandom(4).hex()}"
        self._generation = 0
        self._lock = threading.Lock()

    # --- starting ------------------------------------------------------------------------------

    def start(self) -> None:
        self._supervisor.release()      # a gated fork point (scv exec) must fork before the first request
        errors: dict[str, tuple[str, str]] = {}

        def start_one(server: _Server) -> None:
            failed = self._launch(server, None)
            if failed is not None:
                errors[server.config.name] = failed

        threads = [threading.Thread(target=start_one, args=(s,), name=f"scv-mcp-{s.config.name}", daemon=True)
                   for s in self._servers.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for name, (error, tail) in errors.items():
            server = self._servers[name]
            if server.config.required:
                self.close()
                raise McpStartError(f"the required MCP server {name} did not start: {error}")
            self._leave_out(server, error, tail)
        self._generation += 1

    def _launch(self, server: _Server, cancel: Cancellation | None) -> tuple[str, str] | None:
        """Starts the server's worker and process; None when it is UP, else (error, stderr tail)."""
        from scv.supervision.live_worker import LiveWorker
        config, ctx = server.config, self._ctx
        try:
            worker = LiveWorker(self._supervisor, ctx.config.tools.worker_memory_mb << 20)
        except WorkerLost as err:
            return str(err), ""
        from scv.sandbox.choose import plan_for
        try:
            sandbox = msgspec.to_builtins(plan_for(ctx.config, ctx.workspace, None))
        except ScvError as err:
            worker.close()
            return str(err), ""
        args = {"op": "start", "server": config.name, "argv": config.argv, "env": config.env,
                "startup_timeout_seconds": config.startup_timeout_seconds, "session_id": self._session,
                "delegation": f"mcp-{config.name}-{os.urandom(3).hex()}", "depth": ctx.delegation_depth + 1,
                "sandbox": sandbox}
        call_id, _ = self._supervisor.new_handle()
        message = Call(tool=f"mcp__{config.name}", executor=EXECUTOR, args=args, workspace=str(ctx.workspace),
                       handle=worker.handle, id=call_id,
                       timeout_seconds=config.startup_timeout_seconds + BACKSTOP_SECONDS,
                       output_limit_bytes=ctx.config.tools.output_limit_bytes,
                       options={"scv_home": self._home, "memory_mb": ctx.config.tools.worker_memory_mb,
                                **to_options(self._trace.context)})
        result = worker.call(message, cancel=cancel)
        if not result.ok:
            worker.close()
            return str(result.value.get("error")), str(result.value.get("stderr_tail") or "")
        with server.lock:
            server.worker = worker
            server.tools = offered_tools(config, result.value.get("tools") or [], self._note)
            server.protocol = str(result.value.get("protocol_version") or "")
            server.move(ServerState.UP)
        return None

    def _leave_out(self, server: _Server, error: str, tail: str) -> None:
        with server.lock:
            if server.state is ServerState.OUT:
                return
            server.move(ServerState.OUT)
            server.tools = []
            worker, server.worker = server.worker, None
        if worker is not None:
            worker.close()
        self._generation += 1
        ev.emit(self._emit, ev.McpFailed(server=server.config.name, error=error, stderr_tail=tail))
        self._note(f"the MCP server {server.config.name} is left out of this session: {error}")

    # --- between model requests ----------------------------------------------------------------

    def offer(self) -> tuple[int, list[OfferedTool]]:
        for server in self._servers.values():
            if server.state is ServerState.UP:
                self._sync(server)
        tools = [tool for server in self._servers.values() if server.state is not ServerState.OUT
                 for tool in server.tools]
        return self._generation, tools

    def _sync(self, server: _Server) -> None:
        worker = server.worker
        if worker is None or not worker.alive():
            self._crashed(server, "it exited between calls", "")
            return
        call_id, _ = self._supervisor.new_handle()
        message = Call(tool=f"mcp__{server.config.name}", executor=EXECUTOR, args={"op": "sync"},
                       workspace=str(self._ctx.workspace), handle=worker.handle, id=call_id,
                       timeout_seconds=server.config.startup_timeout_seconds + BACKSTOP_SECONDS,
                       output_limit_bytes=self._ctx.config.tools.output_limit_bytes)
        try:
            result = worker.call(message)
        except WorkerLost:
            self._crashed(server, "it exited between calls", "")
            return
        if not result.ok:
            self._crashed(server, str(result.value.get("error")), str(result.value.get("stderr_tail") or ""))
            return
        listed = result.value.get("tools")
        if listed is not None:
            server.tools = offered_tools(server.config, listed, self._note)
            self._generation += 1

    def _crashed(self, server: _Server, error: str, tail: str) -> None:
        """A crash of an UP server: the first leaves it DOWN (restarted at its next call), the
        second (a DOWN server restarted and crashed again) leaves it out."""
        with server.lock:
            worker, server.worker = server.worker, None
            first = server.state is ServerState.UP and not server.restarted
            if first:
                server.move(ServerState.DOWN)
        if worker is not None:
            worker.close()
        if not first:
            self._leave_out(server, f"it crashed again after its restart ({error})", tail)

    # --- calls ---------------------------------------------------------------------------------

    def call(self, tool: OfferedTool, arguments: dict[str, Any], launch: Any) -> Result:
        server = self._servers.get(tool.server)
        if server is None or server.state is ServerState.OUT:
            return _failure(f"the MCP server {tool.server} is left out of this session; its tools are gone")
        if server.state is ServerState.DOWN or server.worker is None or not server.worker.alive():
            if server.state is ServerState.UP:
                self._crashed(server, "it exited between calls", "")
            if server.state is not ServerState.DOWN:
                return _failure(f"the MCP server {tool.server} is left out of this session; its tools are gone")
            server.restarted = True         # the one restart
            failed = self._launch(server, launch.cancel)
            if failed is not None and launch.cancel is not None and launch.cancel.cancelled:
                server.restarted = False    # cancelled while starting: not the server's fault
                return _failure(f"the call was cancelled while the MCP server {tool.server} restarted",
                                status="cancelled")
            if failed is not None:
                self._leave_out(server, f"its restart failed: {failed[0]}", failed[1])
                return _failure(f"the MCP server {tool.server} crashed and its restart failed: {failed[0]}",
                                stderr_tail=failed[1])
        worker = server.worker
        message = launch.message(EXECUTOR, {"op": "call", "tool": tool.tool, "arguments": arguments},
                                 handle=worker.handle)
        try:
            result = launch.live(worker, message)
        except WorkerLost:
            result = _failure(f"the MCP server {tool.server} exited before the call reached it")
        _traced(launch.span, server, tool, result.value)
        if not result.ok and (result.value.pop("server_gone", False) or not worker.alive()):
            self._crashed(server, str(result.value.get("error")), str(result.value.get("stderr_tail") or ""))
        return result

    def close(self) -> None:
        for server in self._servers.values():
            with server.lock:
                worker, server.worker = server.worker, None
            if worker is not None:
                worker.close()
