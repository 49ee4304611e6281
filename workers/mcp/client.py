"""Executor of the `mcp` tools: one MCP server process per configured server, kept by a live
worker (workers/live_runtime.py) for the whole session, and SCV's own MCP client speaking to it
over stdio on the JSON-RPC line connection (scv/core/jsonrpc.py).

The worker's calls are operations on the server (`args["op"]`):
- `start` (the first call): the process is started in its own group with the scrubbed
  environment, recorded as a delegation; `initialize`, `notifications/initialized` and every page
  of `tools/list` must finish within the server's startup timeout.
- `call`: one `tools/call`, its progress relayed, a cancel or the deadline answered with
  `notifications/cancelled` and the call's end at once; content bounded by the output limit.
- `sync`: between model requests, the tool list again if the server said it changed.

Whatever the server does wrong (exits, writes what is not JSON-RPC, a line over the limit, an
answer to no request) fails the call in flight with a sentence and its stderr tail, and the
server is stopped: the worker then exits, and the supervisor restarts it once (scv/mcp/servers.py).
"""

import os
import time
from pathlib import Path
from typing import Any

import msgspec

from scv import __version__
from scv.core import jsonrpc, lineage
from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.agents.environment import is_removed
from scv.core.jsonrpc import Connection, Incoming, Response, WireError, decode_as
from scv.core.mcp_wire import (CLIENT_VERSION, ERROR_TYPE, KNOWN_VERSIONS, REQUEST_ID, CallParams, CallResult,
                               CancelledParams, ClientInfo, InitializeParams, InitializeResult, ProgressParams,
                               ToolsListParams, ToolsListResult)
from scv.core.traceparent import apply_options, from_options, to_meta
from workers.agents import tracking
from workers.delegation_records import RecordKeeper
from workers.live.process import LiveProcess
from workers.runtime import Reply, ToolFailure, WorkerContext
from workers.sandbox_call import SandboxedRun, SandboxError

# A line longer than this fails the call (and is never held whole): far above any sane answer.
LINE_LIMIT = 16 << 20
MAX_PAGES = 100


def environment(inherited: dict[str, str], own: dict[str, str], parent: str, depth: int) -> dict[str, str]:
    """The agents' scrubbed environment (PATH kept; keys, endpoints and SCV's own settings
    removed, by the same rule as every agent's), then the server's own `env`, then the tags."""
    generic = DESCRIPTORS["codex"]      # the common rule: *_API_KEY and COMMON_REMOVED, plus OPENAI_/CODEX_
    env = {name: value for name, value in inherited.items()
           if not is_removed(name, generic) and not name.endswith(("_TOKEN", "_SECRET", "_PASSWORD"))}
    env.update(own)
    env[lineage.PARENT_VARIABLE] = lineage.extend(inherited.get(lineage.PARENT_VARIABLE), parent)
    env[lineage.DEPTH_VARIABLE] = str(depth)
    return env


class McpClient:
    """The LiveAgent of one MCP server (see workers/live_runtime.py)."""

    def __init__(self, args: dict[str, Any], ctx: WorkerContext):
        self.server = args["server"]
        self.limit_bytes = ctx.call.output_limit_bytes
        instance = ctx.call.handle.split("/", 1)[0]
        own = lineage.link(instance, args["session_id"], args["delegation"])
        env = environment(dict(os.environ), args.get("env") or {}, own, args["depth"])
        apply_options(env, ctx.call.options)        # the server's process starts under the run's span
        cwd = os.path.realpath(ctx.workspace)
        sandbox = SandboxedRun(args.get("sandbox"))
        try:
            sandbox.__enter__()
        except SandboxError as err:
            raise ToolFailure(f"{err}; the MCP server {self.server} did not start") from None
        run = tracking.DelegatedRun(handle=args["delegation"], agent=f"mcp:{self.server}",
                                    parent=env[lineage.PARENT_VARIABLE], depth=args["depth"], cwd=cwd,
                                    conversation=None, turn=None)
        try:
            self.proc = LiveProcess(list(args["argv"]), cwd, sandbox.environment(env), ctx.call.handle, run,
                                    RecordKeeper(Path(ctx.options["scv_home"])), sandbox)
        except SandboxError as err:
            raise ToolFailure(f"{err}; the MCP server {self.server} did not start") from None
        except OSError as err:
            raise ToolFailure(f"the MCP server {self.server} could not be started: {args['argv'][0]}: "
                              f"{err.strerror}") from None
        self.wire = Connection(limit=LINE_LIMIT, peer=f"the MCP server {self.server}")
        self.answers: dict[int, Response] = {}
        self.abandoned: set[int] = set()      # requests given up on (cancelled, past their deadline)
        self.changed = False            # notifications/tools/list_changed arrived since the last list
        self.progress_token: str | None = None
        self.progress_seen = 0
        self.ctx: WorkerContext | None = None
        self.startup_seconds = 0.0

    # --- the calls of the worker ---------------------------------------------------------------

    def turn(self, args: dict[str, Any], ctx: WorkerContext) -> Reply:
        op = args["op"]
        if not self.proc.alive or (op != "start" and not self.on_idle()):
            raise self._gone("before the call")
        if op == "start":
            self.startup_seconds = float(args["startup_timeout_seconds"])
            deadline = time.monotonic() + self.startup_seconds
            return Reply(self._start(ctx, deadline))
        if op == "sync":
            if not self.changed:
                return Reply({"tools": None})
            return Reply({"tools": self._list(ctx, time.monotonic() + ctx.call.timeout_seconds, "tools/list")})
        if op == "call":
            return Reply(self._call(args, ctx))
        raise ToolFailure(f"no MCP operation {op!r}")

    def _start(self, ctx: WorkerContext, deadline: float) -> dict[str, Any]:
        params = InitializeParams(CLIENT_VERSION, {}, ClientInfo("scv", __version__))
        answer = self._ask("initialize", params, ctx, deadline, "startup")
        try:
            init = decode_as(answer.result, InitializeResult, f"{self.wire.peer}'s initialize answer")
        except WireError as err:
            raise self._fault(str(err)) from None
        if init.protocol_version not in KNOWN_VERSIONS:
            raise self._fault(f"the MCP server {self.server} speaks protocol revision {init.protocol_version!r}, "
                              f"which SCV does not know (it speaks {', '.join(KNOWN_VERSIONS)})")
        self.wire.notify("notifications/initialized", {})
        tools = self._list(ctx, deadline, "startup")
        return {"tools": tools, "protocol_version": init.protocol_version, "server_name": init.server_info.name}

    def _list(self, ctx: WorkerContext, deadline: float, what: str) -> list[dict[str, Any]]:
        self.changed = False
        tools: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_PAGES):
            answer = self._ask("tools/list", ToolsListParams(cursor), ctx, deadline, what)
            try:
                page = decode_as(answer.result, ToolsListResult, f"{self.wire.peer}'s tools/list answer")
            except WireError as err:
                raise self._fault(str(err)) from None
            tools.extend({"name": t.name, "description": t.description, "input_schema": t.input_schema,
                          "read_only": bool(t.annotations and t.annotations.read_only_hint)} for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise self._fault(f"the MCP server {self.server} listed more than {MAX_PAGES} pages of tools")

    def _call(self, args: dict[str, Any], ctx: WorkerContext) -> dict[str, Any]:
        deadline = time.monotonic() + ctx.call.timeout_seconds
        self.progress_token, self.progress_seen, self.ctx = f"scv-{ctx.call.id}", 0, ctx
        # The call's span is the server's parent (the MCP conventions' propagation in _meta).
        meta = {"progressToken": self.progress_token, **to_meta(from_options(ctx.call.options))}
        try:
            answer = self._ask("tools/call", CallParams(args["tool"], args.get("arguments") or {}, meta),
                               ctx, deadline, f"the call of {args['tool']}")
        finally:
            self.progress_token, self.ctx = None, None
        try:
            result = decode_as(answer.result, CallResult, f"{self.wire.peer}'s tools/call answer")
        except WireError as err:
            raise ToolFailure(str(err)) from None
        content, cut = bounded(result.content, self.limit_bytes)
        value: dict[str, Any] = {"server": self.server, "tool": args["tool"], "content": content, "truncated": cut,
                                 REQUEST_ID: str(answer.id)}
        if result.structured_content is not None:
            # Kept only whole and within the limit beside the content (it most often repeats it).
            if not cut and len(msgspec.json.encode(result.structured_content)) <= self.limit_bytes:
                value["structured"] = result.structured_content
            else:
                value["truncated"] = True
        if result.is_error:
            text = " ".join(block.get("text", "") for block in content if block.get("type") == "text").strip()
            raise ToolFailure(f"{args['tool']} on the MCP server {self.server} failed: "
                              f"{text[:2000] or 'it gave no reason'}", **value, **{ERROR_TYPE: "tool_error"})
        return value

    # --- waiting for an answer -----------------------------------------------------------------

    def _ask(self, method: str, params: Any, ctx: WorkerContext, deadline: float, what: str) -> Response:
        request_id = self.wire.request(method, params)
        faults = (self.wire.ignored, self.wire.skipped)
        while True:
            answer = self.answers.pop(request_id, None)
            if answer is not None:
                if answer.error is not None:
                    if method == "tools/call":
                        raise ToolFailure(f"the MCP server {self.server} refused {params.name}: {answer.error.text()}",
                                          **{REQUEST_ID: str(request_id), ERROR_TYPE: str(answer.error.code)})
                    raise self._fault(f"the MCP server {self.server} answered {method} with an error: "
                                      f"{answer.error.text()}")
                return answer
            if ctx.token.cancelled or time.monotonic() >= deadline:
                # Still pending on the connection: a late answer (the specification allows one) is
                # then a known id, dropped here, not a fault.
                self.abandoned.add(request_id)
                why = "was cancelled" if ctx.token.cancelled else "ran past its timeout"
                if method == "tools/call":
                    self.wire.notify("notifications/cancelled", CancelledParams(request_id, f"the call {why}"))
                    self.proc.flush(self.wire.out)
                    raise ToolFailure(f"{what} on the MCP server {self.server} {why}; notifications/cancelled was "
                                      "sent", status="cancelled" if ctx.token.cancelled else "timeout")
                if what == "startup":
                    raise self._fault(f"the MCP server {self.server} did not finish starting (initialize and "
                                      f"tools/list) within its startup timeout of {self.startup_seconds:g} s "
                                      f"(mcp_servers.{self.server}.startup_timeout_seconds)")
                raise self._fault(f"the MCP server {self.server} {why} at {method}")
            pumped = self.proc.pump(max(0.0, deadline - time.monotonic()), ctx.token.fds(), self.wire.out)
            if pumped.ready:
                ctx.token.check()
            for chunk in pumped.stdout:
                self._dispatch(self.wire.feed(chunk))
            if pumped.exited:
                self._dispatch(self.wire.close())
                if request_id in self.answers:
                    continue
                raise self._gone(f"during {what}")
            if (self.wire.ignored, self.wire.skipped) != faults:
                raise self._fault(self._misbehaved(faults, what))

    def _misbehaved(self, before: tuple[int, int], what: str) -> str:
        if self.wire.skipped != before[1]:
            return f"the MCP server {self.server} wrote a line over {LINE_LIMIT >> 20} MiB during {what}"
        if self.wire.unmatched:
            return f"the MCP server {self.server} answered a request that was not in flight during {what}"
        return f"the MCP server {self.server} wrote something that is not JSON-RPC during {what}"

    def _dispatch(self, messages: list) -> None:
        for message in messages:
            if isinstance(message, Response):
                if message.id in self.abandoned:
                    self.abandoned.discard(message.id)
                else:
                    self.answers[message.id] = message
            elif message.id is None:
                self._notification(message)
            elif message.method == "ping":
                self.wire.respond(message.id, {})
            else:       # SCV declares no client capability: no roots, sampling or elicitation
                self.wire.respond_error(message.id, jsonrpc.METHOD_NOT_FOUND,
                                        f"Method not found: SCV does not serve {message.method}")
        self.proc.flush(self.wire.out)

    def _notification(self, message: Incoming) -> None:
        if message.method == "notifications/tools/list_changed":
            self.changed = True
        elif message.method == "notifications/progress" and self.ctx is not None:
            try:
                progress = decode_as(message.params, ProgressParams)
            except WireError:
                return
            if progress.progress_token == self.progress_token:
                self.progress_seen += 1
                self.ctx.progress(progress.message or f"{self.server}: progress {progress.progress:g}"
                                  + (f" of {progress.total:g}" if progress.total else ""))

    # --- faults --------------------------------------------------------------------------------

    def _stderr_note(self) -> str:
        lines = [line.strip() for line in self.proc.stderr.text().splitlines() if line.strip()]
        return f"; its stderr ends: {' | '.join(lines[-3:])[-400:]}" if lines else ""

    def _gone(self, when: str) -> ToolFailure:
        self.proc.forget()
        return ToolFailure(f"the MCP server {self.server} {self.proc.exit_text()} {when}{self._stderr_note()}",
                           stderr_tail=self.proc.stderr.text(), server_gone=True)

    def _fault(self, sentence: str) -> ToolFailure:
        """The server cannot be trusted with another call: it is stopped (the worker ends with it)."""
        tail = self.proc.stderr.text()
        self.proc.shutdown(grace=0)
        return ToolFailure(sentence + self._stderr_note(), stderr_tail=tail, server_gone=True)

    # --- between calls -------------------------------------------------------------------------

    def idle_fds(self) -> list[int]:
        return self.proc.fds() if self.proc.alive else []

    def on_idle(self) -> bool:
        """Output between calls (notifications, pings); False once the server is gone."""
        return self.proc.pump_idle(self.wire.out, self._idle_output)

    def _idle_output(self, chunks: list[bytes], exited: bool) -> None:
        for chunk in chunks:
            self._dispatch(self.wire.feed(chunk))

    def close(self) -> None:
        self.proc.shutdown()


def bounded(content: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Text blocks kept up to `limit` bytes in all; images, audio and resources summarised."""
    kept: list[dict[str, Any]] = []
    left, cut = limit, False
    for block in content:
        kind = block.get("type")
        if kind == "text":
            data = str(block.get("text", "")).encode()
            if len(data) > left:
                data, cut = data[:left], True
            kept.append({"type": "text", "text": data.decode("utf-8", "ignore")})
            left -= len(data)
        elif kind in ("image", "audio"):
            size = len(str(block.get("data", ""))) * 3 // 4
            kept.append({"type": kind, "mimeType": block.get("mimeType"), "bytes": size,
                         "note": f"a {kind} of about {size} bytes, not shown"})
        elif kind in ("resource", "resource_link"):
            resource = block.get("resource") if kind == "resource" else block
            resource = resource if isinstance(resource, dict) else {}
            text = resource.get("text")
            entry = {"type": kind, "uri": resource.get("uri"), "mimeType": resource.get("mimeType")}
            if isinstance(text, str):
                data = text.encode()
                if len(data) > left:
                    data, cut = data[:left], True
                entry["text"] = data.decode("utf-8", "ignore")
                left -= len(data)
            kept.append(entry)
        else:
            kept.append({"type": str(kind), "note": "content of a kind SCV does not show"})
    return kept, cut

