"""A tool call's path through the supervisor side: parse and check the arguments, assess the
risk, ask for approval, then run it in a worker. Calls of one runner run one at a time."""

import threading
from dataclasses import dataclass
from typing import Any, Callable

import msgspec

from scv.approval import Approver, check_approval
from scv.cancellation import Cancellation
from scv.messages import ApprovalRequest, Call, Result
from scv.supervisor import Supervisor
from scv.tools.base import Risk, ToolContext, ToolSpec
from scv.tools.registry import Registry


@dataclass(frozen=True)
class PreparedCall:
    spec: ToolSpec
    args: msgspec.Struct
    risk: Risk
    summary: str


class ToolRunner:
    def __init__(self, supervisor: Supervisor, registry: Registry, ctx: ToolContext, approver: Approver):
        self.supervisor = supervisor
        self.registry = registry
        self.ctx = ctx
        self.approver = approver
        self._one_at_a_time = threading.Lock()

    def prepare(self, name: str, raw: str | bytes | dict[str, Any]) -> PreparedCall:
        """Validation and risk; raises RefusedError before anything runs."""
        spec = self.registry.get(name)
        args = spec.parse(raw, self.ctx)
        return PreparedCall(spec, args, spec.risk(args, self.ctx), spec.summary(args, self.ctx))

    def approve(self, prepared: PreparedCall, approver: Approver | None = None) -> None:
        check_approval(self.ctx.config.tools.approval_policy, prepared.risk, prepared.spec.name, prepared.summary,
                       approver or self.approver)

    def run(self, prepared: PreparedCall, *, cancel: Cancellation | None = None,
            on_progress: Callable[[str], None] | None = None,
            on_approval: Callable[[ApprovalRequest], bool] | None = None) -> Result:
        spec, ctx = prepared.spec, self.ctx
        started = spec.start_detached(prepared.args, ctx, self)
        if started is not None:
            return Result(ok=True, value=started)
        tools = ctx.config.tools
        call_id, handle = self.supervisor.new_handle()
        call = Call(tool=spec.name, executor=spec.executor, args=spec.worker_args(prepared.args, ctx),
                    workspace=str(ctx.workspace), handle=handle, id=call_id,
                    timeout_seconds=spec.timeout_seconds(prepared.args, ctx),
                    output_limit_bytes=tools.output_limit_bytes,
                    options={**spec.options(ctx), "memory_mb": tools.worker_memory_mb})
        with self._one_at_a_time, spec.listen(prepared.args, ctx, cancel) as cancel:
            result = self.supervisor.run(call, call_id, memory_bytes=tools.worker_memory_mb << 20, cancel=cancel,
                                         on_progress=on_progress, on_approval=on_approval)
        return Result(ok=result.ok, value=spec.complete(prepared.args, result.ok, result.value, ctx))

    def call(self, name: str, raw: str | bytes | dict[str, Any], **run_options) -> Result:
        prepared = self.prepare(name, raw)
        self.approve(prepared)
        return self.run(prepared, **run_options)
