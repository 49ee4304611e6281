"""`scv tools`: the tools a session here would offer, with their risk (and JSON Schema)."""

import sys

import click

from scv.commands.options import workspace_option
from scv.commands.output import emit_json
from scv.config.load import scv_home
from scv.core.errors import ScvError
from scv.session.context import load_context
from scv.tools.registry import build_registry
from scv.tools.services import open_services


@click.command("tools")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, with their schemas.")
def tools_command(workspace: str | None, as_json: bool) -> None:
    """List the tools with their risk (and, with --json, their JSON Schema)."""
    try:
        ctx = load_context(workspace)
        # What a session here would offer, jobs included.
        services = open_services(ctx.config, scv_home())
        described = [spec.describe(ctx) for spec in build_registry(ctx, services)]
        services.close_opened_agents()
        sandbox = None
        if as_json:
            from scv.sandbox.report import sandbox_section     # what this kernel supports: --json only
            sandbox = sandbox_section(ctx.config)
    except ScvError as err:
        if not as_json:
            raise
        # A machine reading --json gets the sentence on stdout too, as `scv tool` gives it.
        emit_json({"error": str(err)})
        click.echo(f"scv: {err}", err=True)
        sys.exit(err.exit_code)
    if as_json:
        emit_json({"tools": described, "sandbox": sandbox})
        return
    width = max(len(tool["name"]) for tool in described)
    for tool in described:
        click.echo(f"{tool['name']:<{width}}  {tool['risk']:<10}  {tool['description'].split('. ')[0]}")
