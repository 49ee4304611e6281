"""`scv tool NAME [ARGS_JSON]` for click: the arguments and their help. The run itself is
scv/commands/tool_run.py, which a plain command line reaches without click (scv/entry.py)."""

import click

from scv.commands.options import workspace_option
from scv.commands.tool_run import run_tool


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
    run_tool(name, args_json, workspace, auto_approve)
