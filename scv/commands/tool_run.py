"""The run of `scv tool NAME [ARGS_JSON]`: any tool through the whole SCV path (`scv tools` lists
them). scv/commands/tool.py declares the command for click; SIGNATURE is the same for the plain
reading."""

import sys
from typing import NoReturn

from scv.commands.output import emit_json
from scv.core.errors import RefusedError, ScvError, interrupted_exit
from scv.lifecycle import say
from scv.plain_argv import Option, Signature, text
from scv.supervision.supervisor import Supervisor
from scv.tools.catalog import executor_module


# scv/commands/tool.py's parameters, for scv/entry.py (tests/test_plain_argv.py checks
# they are click's).
SIGNATURE = Signature(arguments=("name", "args_json"), required=1, options=(
    Option("workspace", ("-C", "--workspace"), text),
    Option("auto_approve", ("--auto-approve",)),
))


def run_tool(name: str, args_json: str | None, workspace: str | None, auto_approve: bool) -> NoReturn:
    """The run of `scv tool` with its parameters read (scv/commands/tool.py says each)."""
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
            say(f"scv: {err}", err=True)
            code = 2 if isinstance(err, RefusedError) else err.exit_code
        else:
            emit_json(result.value)
            code = interrupted_exit(stopped_by[0]) if stopped_by else 0 if result.ok else 1
    finally:
        run.span.set({"scv.exit_code": code})
        run.finish(None if code == 0 else f"exit status {code}")
    sys.exit(code)
