"""What `scv tool` runs once its fork point is up: the context, the one tool's spec, approval,
and the call itself, cancelled by SIGINT or SIGTERM. Loaded by scv/commands/tool_run.py after it
starts the fork point, so that the two load side by side."""

import contextlib

from scv.config.load import scv_home
from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from scv.core.messages import Result
from scv.core.risk import Risk
from scv.core.signals import on_stop_signals
from scv.session import spans
from scv.session.calls import ToolRunner
from scv.session.context import load_context
from scv.supervision.approval import choose_approver
from scv.supervision.supervisor import Supervisor
from scv.telemetry.spans import NO_SPAN, Span
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry
from scv.tools.services import Services


def run_call(supervisor: Supervisor, name: str, args_json: str, workspace: str | None, auto_approve: bool,
             stdin_is_terminal: bool, trace: Span = NO_SPAN) -> tuple[Result, list[int]]:
    """The call's result and the signals that stopped it (empty: none). Raises ScvError when the
    call is refused before anything runs. The call is the span `execute_tool {name}` under
    `trace` (the run's), and what it starts (a command, an agent) names that span as its parent."""
    # Only read_skill reads the session's skills; finding them walks the skill folders.
    ctx = load_context(workspace, skills=name == "read_skill")
    # Only a tool that asks for the delegated agents (the agent tools) discovers them.
    services = Services(open_agents=lambda: _open_agents(ctx))
    span = spans.named_tool_span(trace, name, args_json, ctx.config)
    approval: str | None = None
    try:
        runner = ToolRunner(supervisor, build_registry(ctx, services), ctx,
                            choose_approver(auto_approve, stdin_is_terminal))
        prepared = runner.prepare(name, args_json)
        if span.recording:
            span.set({"scv.tool.risk": prepared.risk.value})
        asked: list[bool] = []

        def approver(tool: str, risk: Risk, summary: str) -> bool:
            asked.append(True)
            return runner.approver(tool, risk, summary)

        approval = "denied"
        runner.approve(prepared, approver=approver)
        approval = "approved" if asked and not auto_approve else "auto"
        with _cancelled_by_signals() as (cancel, stopped_by):
            result = runner.run(prepared, cancel=cancel, span=span)
    except RefusedError as err:
        spans.end_tool(span, False, {"error": str(err), "refused": True}, approval)
        raise
    except BaseException as err:
        span.end(type(err).__name__)
        raise
    finally:
        services.close_opened_agents()
    spans.end_tool(span, result.ok, result.value, approval)
    return result, stopped_by


def _open_agents(ctx: ToolContext):
    from scv.agents.session import open_agent_session
    return open_agent_session(ctx.config, scv_home())


@contextlib.contextmanager
def _cancelled_by_signals():
    """While the call runs (after any y/N question), SIGINT and SIGTERM cancel it: its processes
    get TERM, two seconds, then KILL, and the result still reaches stdout."""
    cancel, stopped_by = Cancellation(), []

    def on_signal(signum: int) -> None:
        stopped_by.append(signum)
        cancel.cancel()

    try:
        with on_stop_signals(on_signal):
            yield cancel, stopped_by
    finally:
        cancel.close()
