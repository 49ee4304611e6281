"""A tool call's path through the supervisor side: parse and prepare the arguments, assess the
risk, ask for approval, then run it: in the foreground (the spec's `run`, through a `CallLaunch`)
or, when the spec says so, as a background job that the runner starts and returns at once.
Calls of one runner run one at a time; a job runs through a runner of its own."""

import threading
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from scv.core.cancellation import Cancellation
from scv.core.errors import ScvError
from scv.core.messages import ApprovalRequest, Call, Result
from scv.core.risk import Risk
from scv.core.traceparent import to_options
from scv.supervision.approval import Approver, check_approval
from scv.supervision.supervisor import Supervisor
from scv.telemetry.spans import NO_SPAN, Span
from scv.tools.base import ToolContext, ToolSpec
from scv.tools.registry import Registry

if TYPE_CHECKING:       # a single `scv tool` call imports neither the job table nor live workers
    from scv.jobs.manager import Jobs
    from scv.supervision.live_worker import LiveWorker


class PreparedCall(msgspec.Struct, frozen=True):
    spec: ToolSpec
    call: Any               # the spec's per-call object (what `prepare` returned)
    risk: Risk
    summary: str


class CallLaunch(msgspec.Struct):
    """One approved call's way to workers (the `Launch` of scv/tools/base.py)."""

    supervisor: Supervisor
    spec: ToolSpec
    prepared: Any
    ctx: ToolContext
    cancel: Cancellation | None
    on_progress: Callable[[str], None] | None
    on_approval: Callable[[ApprovalRequest], bool] | None
    span: Span = NO_SPAN        # what the processes this call starts name as their TRACEPARENT

    def message(self, executor: str, args: dict[str, Any], *, handle: str | None = None) -> Call:
        tools = self.ctx.config.tools
        call_id, own_handle = self.supervisor.new_handle()
        options = {**self.spec.options(self.ctx), "memory_mb": tools.worker_memory_mb}
        if self.span.recording:
            options.update(to_options(self.span.context))
        return Call(tool=self.spec.name, executor=executor, args=args, workspace=str(self.ctx.workspace),
                    handle=handle or own_handle, id=call_id,
                    timeout_seconds=self.spec.timeout_seconds(self.prepared, self.ctx),
                    output_limit_bytes=tools.output_limit_bytes, options=options)

    def under(self, span: Span) -> "CallLaunch":
        """This launch with its workers under `span` (the agent tool's `invoke_agent`), whose
        events then record the permission requests the agent relays."""
        relay = self.on_approval
        if relay is None or not span.recording:
            return msgspec.structs.replace(self, span=span)

        def recorded(ask: ApprovalRequest) -> bool:
            approved = relay(ask)
            span.event("scv.permission_request", {"scv.tool.name": ask.tool, "scv.tool.risk": ask.risk,
                                                  "scv.tool.approval": "approved" if approved else "denied"})
            return approved
        return msgspec.structs.replace(self, span=span, on_approval=recorded)

    def fresh(self, message: Call, cancel: Any = None) -> Result:
        return self.supervisor.run(message, message.id, memory_bytes=self.ctx.config.tools.worker_memory_mb << 20,
                                   cancel=cancel if cancel is not None else self.cancel,
                                   on_progress=self.on_progress, on_approval=self.on_approval)

    def live(self, worker: "LiveWorker", message: Call, cancel: Any = None) -> Result:
        return worker.call(message, cancel=cancel if cancel is not None else self.cancel,
                           on_progress=self.on_progress, on_approval=self.on_approval)

    def start_live(self) -> "LiveWorker":
        from scv.supervision.live_worker import LiveWorker
        return LiveWorker(self.supervisor, self.ctx.config.tools.worker_memory_mb << 20)


class ToolRunner:
    def __init__(self, supervisor: Supervisor, registry: Registry, ctx: ToolContext, approver: Approver,
                 jobs: "Jobs | None" = None):
        self.supervisor = supervisor
        self.registry = registry
        self.ctx = ctx
        self.approver = approver
        self.jobs = jobs
        self._one_at_a_time = threading.Lock()

    def prepare(self, name: str, raw: str | bytes | dict[str, Any]) -> PreparedCall:
        """Validation and risk; raises RefusedError before anything runs."""
        spec = self.registry.get(name)
        call = spec.parse(raw, self.ctx)
        return PreparedCall(spec, call, spec.risk(call, self.ctx), spec.summary(call, self.ctx))

    def approve(self, prepared: PreparedCall, approver: Approver | None = None) -> None:
        check_approval(self.ctx.config.tools.approval_policy, prepared.risk, prepared.spec.name, prepared.summary,
                       approver or self.approver)

    def run(self, prepared: PreparedCall, *, cancel: Cancellation | None = None,
            on_progress: Callable[[str], None] | None = None,
            on_approval: Callable[[ApprovalRequest], bool] | None = None, span: Span = NO_SPAN) -> Result:
        spec, ctx = prepared.spec, self.ctx
        try:
            background = spec.background(prepared.call, ctx)
        except ScvError as err:     # what it continues was taken or forgotten since it was prepared
            return Result(ok=False, value={"error": str(err)})
        if background is not None:
            return self._start_job(prepared, background, span)
        launch = CallLaunch(self.supervisor, spec, prepared.call, ctx, cancel, on_progress, on_approval, span)
        with self._one_at_a_time:
            try:
                result = spec.run(prepared.call, ctx, launch)
            except ScvError as err:
                # Refused at run time (every conversation busy, a live worker gone): the call's result.
                result = Result(ok=False, value={"error": str(err)})
        return Result(ok=result.ok, value=spec.complete(prepared.call, result, ctx))

    def _start_job(self, prepared: PreparedCall, background, span: Span) -> Result:
        if self.jobs is None:
            return Result(ok=False, value={"error": "background jobs belong to a session (scv exec or scv server "
                                                    "--stdio) and there is none here; run the call without "
                                                    "background"})
        # The job's own runner, so the job and the session's foreground calls never wait for each other.
        own = ToolRunner(self.supervisor, self.registry, self.ctx, self.approver)
        foreground = PreparedCall(prepared.spec, background.foreground, prepared.risk, prepared.summary)

        def run(cancel, on_progress, on_approval) -> Result:
            # The job's work stays in the trace, under the call that started it.
            return own.run(foreground, cancel=cancel, on_progress=on_progress, on_approval=on_approval, span=span)

        try:
            job = self.jobs.start(background.agent, background.conversation, run)
        except BaseException:
            if background.release is not None:
                background.release()
            raise
        return Result(ok=True, value={"job": job.id, "agent": background.agent, "status": "running",
                                      "background": True, **background.extra})

    def call(self, name: str, raw: str | bytes | dict[str, Any], **run_options) -> Result:
        prepared = self.prepare(name, raw)
        self.approve(prepared)
        return self.run(prepared, **run_options)
