"""`scv tool NAME [ARGS_JSON]`: any tool through the whole SCV path (`scv tools` lists them)."""

import sys

import click

from scv.commands.options import workspace_option
from scv.commands.output import emit_json
from scv.core.errors import RefusedError, ScvError, interrupted_exit
from scv.supervision.supervisor import Supervisor
from scv.tools.catalog import executor_module


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
    from scv.telemetry.spans import Run
    from scv.telemetry.start import start_run
    run, code = Run(), 1
    try:
        try:
            # The fork point starts first and loads the tool's executor while this process loads the
            # rest of the call's path (the configuration, the one tool's spec): side by side.
            with Supervisor(preload=executor_module(name), refill_spare=False) as supervisor:
                run = start_run("scv tool", {"gen_ai.tool.name": name})     # after the supervisor: a thread
                from scv.commands.tool_call import run_call
                result, stopped_by = run_call(supervisor, name, args_json, workspace, auto_approve,
                                              stdin_is_terminal, run.span)
        except ScvError as err:
            emit_json({"error": str(err)})
            click.echo(f"scv: {err}", err=True)
            code = 2 if isinstance(err, RefusedError) else err.exit_code
        else:
            emit_json(result.value)
            code = interrupted_exit(stopped_by[0]) if stopped_by else 0 if result.ok else 1
    finally:
        run.span.set({"scv.exit_code": code})
        run.finish(None if code == 0 else f"exit status {code}")
    sys.exit(code)
