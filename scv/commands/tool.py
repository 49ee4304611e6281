"""`scv tool NAME [ARGS_JSON]` and `scv tools`: any tool through the whole SCV path."""

import contextlib
import signal
import sys

import click
import msgspec

from scv.approval import choose_approver
from scv.calls import ToolRunner
from scv.cancellation import Cancellation
from scv.commands.common import load_context, workspace_option
from scv.config import scv_home
from scv.errors import RefusedError, ScvError, interrupted_exit
from scv.supervisor import Supervisor
from scv.tools.registry import BUILTIN_SPECS, build_registry, spec_class
from scv.tools.services import Services


def _emit(value: dict) -> None:
    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
    sys.stdout.flush()


@click.command("tool")
@click.argument("name")
@click.argument("args_json", required=False)
@workspace_option
@click.option("--auto-approve", is_flag=True, help="Approve every call that the policy would ask about.")
def tool_command(name: str, args_json: str | None, workspace: str | None, auto_approve: bool) -> None:
    """Run one tool call and print its result as one JSON object.

    ARGS_JSON is a JSON object of the tool's arguments; without it they are read from stdin.
    Exit status: 0 the tool succeeded, 1 it ran and failed (the result has an "error"),
    2 the call was refused before anything ran; 130 (SIGINT) or 143 (SIGTERM) the running call
    was cancelled and its processes stopped (the result is still printed).
    """
    stdin_is_terminal = sys.stdin.isatty()
    if args_json is None:
        args_json = "{}" if stdin_is_terminal else sys.stdin.read()
        stdin_is_terminal = False
    # The fork point starts first, so that it loads the tool's executor while this process
    # loads the configuration; only the tool asked for is imported, agents only if it uses them.
    preload = [spec_class(name).executor.partition(":")[0]] if name in BUILTIN_SPECS else []
    try:
        with Supervisor(preload=preload) as supervisor:
            ctx = load_context(workspace)
            services = Services(open_agents=lambda: _open_agents(ctx))
            try:
                runner = ToolRunner(supervisor, build_registry(ctx, services), ctx,
                                    choose_approver(auto_approve, stdin_is_terminal))
                prepared = runner.prepare(name, args_json)
                runner.approve(prepared)
                with _cancelled_by_signals() as (cancel, stopped_by):
                    result = runner.run(prepared, cancel=cancel)
            finally:
                services.close_opened_agents()
    except ScvError as err:
        _emit({"error": str(err)})
        click.echo(f"scv: {err}", err=True)
        sys.exit(2 if isinstance(err, RefusedError) else err.exit_code)
    _emit(result.value)
    if stopped_by:
        sys.exit(interrupted_exit(stopped_by[0]))
    sys.exit(0 if result.ok else 1)


def _open_agents(ctx):
    from scv.agents.session import open_agent_session
    return open_agent_session(ctx.config, scv_home())


@contextlib.contextmanager
def _cancelled_by_signals():
    """While the call runs (after any y/N question), SIGINT and SIGTERM cancel it: its processes
    get TERM, two seconds, then KILL, and the result still reaches stdout."""
    cancel, stopped_by = Cancellation(), []

    def on_signal(signum, frame):
        stopped_by.append(signum)
        cancel.cancel()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield cancel, stopped_by
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        cancel.close()


@click.command("tools")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, with their schemas.")
def tools_command(workspace: str | None, as_json: bool) -> None:
    """List the tools with their risk (and, with --json, their JSON Schema)."""
    from scv.sandbox.report import sandbox_section
    from scv.tools.services import open_services
    try:
        ctx = load_context(workspace)
        # What a session here would offer, jobs included.
        services = open_services(ctx.config, scv_home())
        described = [spec.describe(ctx) for spec in build_registry(ctx, services)]
        services.close_opened_agents()
        sandbox = sandbox_section(ctx.config) if as_json else None
    except ScvError as err:
        if not as_json:
            raise
        # A machine reading --json gets the sentence on stdout too, as `scv tool` gives it.
        _emit({"error": str(err)})
        click.echo(f"scv: {err}", err=True)
        sys.exit(err.exit_code)
    if as_json:
        _emit({"tools": described, "sandbox": sandbox})
        return
    width = max(len(tool["name"]) for tool in described)
    for tool in described:
        click.echo(f"{tool['name']:<{width}}  {tool['risk']:<10}  {tool['description'].split('. ')[0]}")
