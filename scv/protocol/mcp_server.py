"""`scv mcp`: SCV as a Model Context Protocol server on stdin/stdout (newline-delimited JSON-RPC
2.0, the connection in scv/core/jsonrpc.py). One SCV session's tools per connection: `agent`,
`agent_wait`, `agent_status`, `agent_cancel`, and the built-in tools `--tools` names.

The main thread reads; each `tools/call` runs in its own thread, so `notifications/cancelled`
and the host's answers to elicitation are read while calls run. Closing stdin (or SIGINT/SIGTERM)
cancels every call in flight, stops its processes and closes the session's agents.

Approval: every call goes through `tools.approval_policy` like a model's call; where the policy
asks, and for every request a delegated agent relays, `--auto-approve` approves at once; without
it the host is asked with `elicitation/create` when it declared that capability, otherwise the
request is denied at once (never a wait).
"""

import datetime
import itertools
import os
import select
import threading
import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import msgspec

from scv import __version__
from scv.core import jsonrpc
from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError, ScvError
from scv.core.messages import ApprovalRequest, Result
from scv.core.risk import Risk
from scv.core.signals import on_stop_signals
from scv.core.stopping import SETTLE_SECONDS
from scv.protocol import mcp_spans
from scv.session.calls import ToolRunner
from scv.session.context import load_context
from scv.supervision.approval import Verdict, policy_verdict, relayed_verdict
from scv.supervision.supervisor import Supervisor
from scv.telemetry.spans import NO_SPAN, Span
from scv.tools.registry import build_registry
from scv.tools.services import open_services

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")      # newest first
TASKS_FROM = "2025-11-25"       # the first revision with the task primitive
POLL_MS = 1000
LIVE_TASK = ("working", "input_required")
AGENT_TOOLS = ("agent", "agent_wait", "agent_status", "agent_cancel")
OPTIONAL_TOOLS = ("read", "write", "bash", "web_fetch")
READ_BYTES = 1 << 16


class InitializeParams(msgspec.Struct, rename="camel"):
    protocol_version: str = ""
    capabilities: dict[str, Any] = {}


class TaskParams(msgspec.Struct):
    ttl: int | None = None


class CallParams(msgspec.Struct):
    name: str
    arguments: dict[str, Any] | None = None
    _meta: dict[str, Any] | None = None
    task: TaskParams | None = None


class TaskRef(msgspec.Struct, rename="camel"):
    task_id: str


class CancelledParams(msgspec.Struct, rename="camel"):
    request_id: int | str | None = None


class ElicitResult(msgspec.Struct):
    action: str = "cancel"


@dataclass
class _Call:
    cancel: Cancellation = field(default_factory=Cancellation)
    silenced: bool = False      # cancelled by the host: no response, as the specification says


@dataclass
class _Task:
    """A `tools/call` run as a task: the host polls it instead of waiting for the answer."""
    id: str
    call: _Call
    ttl: int | None
    created: str
    status: str = "working"      # working <-> input_required; working -> completed | failed | cancelled
    updated: str = ""
    answer: dict[str, Any] | None = None
    done: Cancellation = field(default_factory=Cancellation)   # readable once the answer is in
    born: float = field(default_factory=time.monotonic)

    def expired(self, now: float) -> bool:
        """A finished task is kept `ttl` ms from its creation, then forgotten with its result."""
        return self.status not in LIVE_TASK and self.ttl is not None and now >= self.born + self.ttl / 1000

    def describe(self) -> dict[str, Any]:
        return {"taskId": self.id, "status": self.status, "createdAt": self.created,
                "lastUpdatedAt": self.updated or self.created, "ttl": self.ttl, "pollInterval": POLL_MS}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Question:
    answered: Cancellation = field(default_factory=Cancellation)     # readable once the host answered
    approved: bool = False


class McpServer:
    def __init__(self, supervisor: Supervisor, stdin: BinaryIO, stdout: BinaryIO, *, workspace: str | None,
                 tools: tuple[str, ...] = (), auto_approve: bool = False, trace: Span = NO_SPAN):
        self.supervisor = supervisor
        self.trace = trace          # the connection's run span (scv/protocol/mcp_spans.py)
        self.version = ""
        self.stdin, self.stdout = stdin, stdout
        self.auto_approve = auto_approve
        self.ctx = load_context(workspace)
        self.services = open_services(self.ctx.config, _home(), auto_approve=auto_approve)
        self.registry = build_registry(self.ctx, self.services)
        self.offered = self._offer(tools)
        self.wire = jsonrpc.Connection(peer="the host", limit=jsonrpc.MAX_LINE_BYTES)
        self.elicitation = False
        self.tasks = False              # the negotiated revision has the task primitive
        self._tasks: dict[str, _Task] = {}
        self._task_ids = itertools.count(1)
        self.initialized = False
        self._lock = threading.Lock()
        self._calls: dict[Any, _Call] = {}
        self._questions: dict[int, _Question] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = Cancellation()
        self._gone = False

    def _offer(self, tools: tuple[str, ...]) -> dict[str, Any]:
        names = [*AGENT_TOOLS] if self.services.delegation_offered(self.ctx) else []
        names += [t for t in tools if t not in names]
        offered = {}
        for spec in self.registry:
            if spec.name in names:
                offered[spec.name] = spec
        return offered

    # --- output ---------------------------------------------------------------------------------

    def _flush(self) -> None:
        """Writes what the connection queued; called with `_lock` held."""
        data, self.wire.out[:] = bytes(self.wire.out), b""
        if not data or self._gone:
            return
        try:
            self.stdout.write(data)
            self.stdout.flush()
        except (BrokenPipeError, ValueError, OSError):
            self._gone = True
            self._stopping.cancel()

    def _send(self, how: str, *args) -> Any:
        with self._lock:
            out = getattr(self.wire, how)(*args)
            self._flush()
            return out

    # --- the read loop --------------------------------------------------------------------------

    def serve(self) -> int:
        signalled: list[int] = []

        def on_signal(signum: int) -> None:
            signalled.append(signum)
            self._stopping.cancel()

        fd = self.stdin.fileno()
        with on_stop_signals(on_signal):
            try:
                while not self._gone and not signalled:
                    ready, _, _ = select.select([fd, self._stopping.fileno()], [], [])
                    if fd not in ready:
                        break
                    chunk = os.read(fd, READ_BYTES)
                    before = self.wire.ignored - self.wire.unmatched
                    arrived = self.wire.feed(chunk) if chunk else self.wire.close()
                    self._take(arrived, self.wire.ignored - self.wire.unmatched - before)
                    if not chunk:
                        break
            finally:
                self._shutdown()
        return 0

    def _take(self, arrived: list, garbage: int) -> None:
        """`garbage`: lines that were not JSON-RPC, each answered with a parse error."""
        for message in arrived:
            if isinstance(message, jsonrpc.Response):
                self._answered(message)
            else:
                self._handle(message)
        for _ in range(garbage):
            self._send("respond_error", None, jsonrpc.PARSE_ERROR, "a line was not a JSON-RPC 2.0 message; it was "
                                                                   "skipped")
        if self.wire.skipped:
            skipped, self.wire._splitter.skipped = self.wire._splitter.skipped, 0
            for _ in range(skipped):
                self._send("respond_error", None, jsonrpc.INVALID_REQUEST,
                           f"a message was over {jsonrpc.MAX_LINE_BYTES} bytes; it was skipped")

    def _handle(self, message: jsonrpc.Incoming) -> None:
        method, rid = message.method, message.id
        span: Span | None = None        # the span of an initialize or tools/list, ended here
        try:
            if method == "initialize":
                span = mcp_spans.request_span(self.trace, method, rid, message.params, "")
                params = jsonrpc.decode_as(message.params, InitializeParams, "the host's")
                self.elicitation = isinstance(params.capabilities.get("elicitation"), dict)
                version = params.protocol_version if params.protocol_version in VERSIONS else VERSIONS[0]
                self.version = version
                self.trace.set({"mcp.protocol.version": version})
                self.initialized = True
                self.tasks = version == TASKS_FROM
                capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
                if self.tasks:
                    capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
                self._send("respond", rid, {"protocolVersion": version, "capabilities": capabilities,
                                            "serverInfo": {"name": "scv", "version": __version__}})
                span.set({"mcp.protocol.version": version})
                mcp_spans.end_request(span)
            elif method == "notifications/cancelled":
                params = jsonrpc.decode_as(message.params, CancelledParams, "the host's")
                with self._lock:
                    call = self._calls.get(params.request_id)
                    if call is not None:
                        call.silenced = True
                if call is not None:
                    call.cancel.cancel()
            elif rid is None:
                return      # other notifications (initialized, progress, ...) need nothing
            elif method == "ping":
                self._send("respond", rid, {})
            elif method == "tools/list":
                span = mcp_spans.request_span(self.trace, method, rid, message.params, self.version)
                self._send("respond", rid, {"tools": [self._describe(spec) for spec in self.offered.values()]})
                mcp_spans.end_request(span)
            elif method == "tools/call":
                params = jsonrpc.decode_as(message.params, CallParams, "the host's")
                if params.name not in self.offered:
                    known = ", ".join(self.offered) or "none"
                    self._send("respond_error", rid, jsonrpc.INVALID_PARAMS,
                               f"unknown tool {params.name!r}; the tools are: {known}")
                    return
                self._start(rid, params)
            elif method.startswith("tasks/") and self.tasks:
                self._task_request(method, rid, message.params)
            else:
                self._send("respond_error", rid, jsonrpc.METHOD_NOT_FOUND, f"scv mcp does not serve {method!r}")
        except jsonrpc.WireError as err:
            if rid is not None:
                self._send("respond_error", rid, jsonrpc.INVALID_PARAMS, str(err))
            if span is not None:
                mcp_spans.end_request(span, jsonrpc.INVALID_PARAMS, str(err))

    def _describe(self, spec) -> dict[str, Any]:
        described = spec.describe(self.ctx)
        risk = spec.declared_risk
        tool = {"name": spec.name, "description": described["description"], "inputSchema": described["schema"],
                "annotations": {"readOnlyHint": risk is Risk.READ_ONLY,
                                "destructiveHint": risk not in (Risk.READ_ONLY, Risk.NETWORK),
                                "openWorldHint": risk in (Risk.NETWORK, Risk.DELEGATE)}}
        if self.tasks and spec.name == "agent":
            tool["execution"] = {"taskSupport": "optional"}
        return tool

    # --- tasks (revision 2025-11-25) ------------------------------------------------------------

    def _task_request(self, method: str, rid, raw) -> None:
        now = time.monotonic()
        with self._lock:
            for expired in [task.id for task in self._tasks.values() if task.expired(now)]:
                del self._tasks[expired]
        if method == "tasks/list":
            with self._lock:
                listed = [task.describe() for task in self._tasks.values()]
            self._send("respond", rid, {"tasks": listed})
            return
        if method not in ("tasks/get", "tasks/result", "tasks/cancel"):
            self._send("respond_error", rid, jsonrpc.METHOD_NOT_FOUND, f"scv mcp does not serve {method!r}")
            return
        ref = jsonrpc.decode_as(raw, TaskRef, "the host's")
        with self._lock:
            task = self._tasks.get(ref.task_id)
        if task is None:
            self._send("respond_error", rid, jsonrpc.INVALID_PARAMS, f"no task {ref.task_id!r} (a finished task is "
                                                                     "forgotten after its ttl); tasks/list lists them")
        elif method == "tasks/get":
            self._send("respond", rid, task.describe())
        elif method == "tasks/cancel":
            if task.status in LIVE_TASK:
                task.call.cancel.cancel()
                task.status, task.updated = "cancelled", _now()
            self._send("respond", rid, task.describe())
        else:
            # Waits for the answer in a thread of its own: the read loop goes on meanwhile.
            thread = threading.Thread(target=self._task_result, args=(rid, task), name=f"mcp-task-{task.id}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def _task_result(self, rid, task: _Task) -> None:
        select.select([task.done.fileno(), self._stopping.fileno()], [], [])
        if task.answer is not None:
            meta = {"io.modelcontextprotocol/related-task": {"taskId": task.id}}
            self._send("respond", rid, {**task.answer, "_meta": meta})

    # --- one call -------------------------------------------------------------------------------

    def _start(self, rid, params: CallParams) -> None:
        call = _Call()
        task = None
        if params.task is not None and self.tasks and params.name == "agent":
            created = _now()
            task = _Task(f"task-{next(self._task_ids)}", call, params.task.ttl, created)
            with self._lock:
                self._tasks[task.id] = task
            self._send("respond", rid, {"task": task.describe()})
        else:
            with self._lock:
                self._calls[rid] = call
        thread = threading.Thread(target=self._run, args=(rid, params, call, task), name=f"mcp-call-{rid}",
                                  daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self, rid, params: CallParams, call: _Call, task: _Task | None = None) -> None:
        token = (params._meta or {}).get("progressToken")
        span = mcp_spans.call_span(self.trace, params.name, rid, params._meta, self.version, params.arguments,
                                   self.ctx.config)
        approval: list[str | None] = [None]
        try:
            result = self._call(params, call.cancel, token, span, approval, task)
        except BaseException as err:        # a defect must still answer the host
            result = Result(ok=False, value={"error": f"scv mcp failed to run the call: {err}"})
        finally:
            with self._lock:
                self._calls.pop(rid, None)
        value = result.value
        failed = not result.ok or "error" in value or (params.name == "agent" and not value.get("background")
                                                       and value.get("status") not in (None, "completed"))
        mcp_spans.end_call(span, failed, value, approval[0])
        if call.silenced:
            return
        answer = {"content": [{"type": "text", "text": msgspec.json.encode(value).decode()}],
                  "structuredContent": value, "isError": failed}
        if task is not None:
            if task.status in LIVE_TASK:
                task.status = "failed" if failed else "completed"
            task.updated, task.answer = _now(), answer
            task.done.cancel()
            return
        self._send("respond", rid, answer)

    def _call(self, params: CallParams, cancel: Cancellation, token, span: Span,
              approval: list[str | None], task: _Task | None = None) -> Result:
        """`approval` gets how the call was approved, for its span."""
        runner = ToolRunner(self.supervisor, self.registry, self.ctx, approver=lambda *_: False,
                            jobs=self.services.jobs)
        asked: list[bool] = []

        def approver(tool: str, risk: Risk, summary: str) -> bool:
            asked.append(self.elicitation and not self.auto_approve)    # else the flag decides (see _ask)
            return self._ask(tool, risk, summary, cancel, task)
        try:
            prepared = runner.prepare(params.name, params.arguments or {})
        except RefusedError as err:
            return Result(ok=False, value={"error": str(err), "refused": True})
        span.set({"scv.tool.risk": prepared.risk.value})
        try:
            runner.approve(prepared, approver=approver)
        except RefusedError as err:
            approval[0] = "denied"
            return Result(ok=False, value={"error": str(err), "refused": True})
        approval[0] = "approved" if any(asked) else "auto"
        if cancel.cancelled:
            return Result(ok=False, value={"error": "the call was cancelled before it ran"})
        count = [0]

        def progress(line: str) -> None:
            if token is None or cancel.cancelled:
                return
            count[0] += 1
            self._send("notify", "notifications/progress", {"progressToken": token, "progress": count[0],
                                                            "message": line})

        def relayed(ask: ApprovalRequest) -> bool:
            return relayed_verdict(self.ctx.config.tools.approval_policy, ask,
                                   lambda risk: self._ask(ask.tool, risk, ask.summary, cancel, task))
        try:
            return runner.run(prepared, cancel=cancel, on_progress=progress, on_approval=relayed, span=span)
        except ScvError as err:
            return Result(ok=False, value={"error": str(err)})

    # --- approvals ------------------------------------------------------------------------------

    def _ask(self, tool: str, risk: Risk, summary: str, cancel: Cancellation, task: _Task | None = None) -> bool:
        """Where the policy asks: `--auto-approve` at once (a headless host such as `claude -p`
        declares elicitation yet declines every request), else the host through elicitation, else
        a denial at once. A task reads `input_required` while its question waits, and the question
        names the task."""
        if self.auto_approve or policy_verdict(self.ctx.config.tools.approval_policy, risk) is Verdict.RUN:
            return True
        if not self.elicitation:
            return False
        question = _Question()
        message = f"scv: {tool} ({risk.value}) wants to {summary}"
        params: dict[str, Any] = {"message": message, "requestedSchema": {"type": "object", "properties": {}}}
        with self._lock:
            if task is not None:
                params["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": task.id}}
                if task.status == "working":
                    task.status, task.updated = "input_required", _now()
            rid = self.wire.request("elicitation/create", params)
            self._questions[rid] = question
            self._flush()
        try:
            select.select([question.answered.fileno(), cancel.fileno(), self._stopping.fileno()], [], [])
            return question.answered.cancelled and not cancel.cancelled and question.approved
        finally:
            with self._lock:
                self._questions.pop(rid, None)
                self.wire.forget(rid)
                if task is not None and task.status == "input_required":
                    task.status, task.updated = "working", _now()
            question.answered.close()

    def _answered(self, response: jsonrpc.Response) -> None:
        with self._lock:
            question = self._questions.get(response.id)
        if question is None:
            return
        if response.error is None:
            try:
                question.approved = jsonrpc.decode_as(response.result, ElicitResult).action == "accept"
            except jsonrpc.WireError:
                question.approved = False
        question.answered.cancel()

    # --- the end --------------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self._stopping.cancel()
        with self._lock:
            calls = list(self._calls.values()) + [task.call for task in self._tasks.values()]
        for call in calls:
            call.cancel.cancel()
        for thread in self._threads:
            thread.join(SETTLE_SECONDS + 1)
        if self.services.jobs is not None:
            self.services.jobs.close()
        self.services.close_opened_agents()


def _home():
    from scv.config.load import scv_home
    return scv_home()
