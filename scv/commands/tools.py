"""`scv tools` for click: the options and their help. The run itself is scv/commands/tools_run.py,
which a plain command line reaches without click (scv/entry.py)."""

import click

from scv.commands.options import workspace_option
from scv.commands.tools_run import run_tools


@click.command("tools")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, with their schemas.")
def tools_command(workspace: str | None, as_json: bool) -> None:
    """List the tools with their risk (and, with --json, their JSON Schema)."""
    run_tools(workspace, as_json)
