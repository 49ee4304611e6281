"""`scv tools`: the tools a session here would offer, with their risk (and JSON Schema)."""

import functools
import sys

import click

from scv.commands.options import workspace_option
from scv.commands.output import emit_json
from scv.config.load import scv_home
from scv.core.errors import ScvError
from scv.session.context import load_context


@click.command("tools")
@workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, with their schemas.")
def tools_command(workspace: str | None, as_json: bool) -> None:
    """List the tools with their risk (and, with --json, their JSON Schema)."""
    try:
        ctx = load_context(workspace)
        if not as_json:
            _list(ctx)
            return
        # What a session here would offer, jobs included, with every schema.
        from scv.tools.registry import build_registry
        from scv.tools.services import open_services
        services = open_services(ctx.config, scv_home())
        described = [spec.describe(ctx) for spec in build_registry(ctx, services)]
        services.close_opened_agents()
        from scv.sandbox.report import sandbox_section     # what this kernel supports
        sandbox = sandbox_section(ctx.config)
    except ScvError as err:
        if not as_json:
            raise
        # A machine reading --json gets the sentence on stdout too, as `scv tool` gives it.
        emit_json({"error": str(err)})
        click.echo(f"scv: {err}", err=True)
        sys.exit(err.exit_code)
    emit_json({"tools": described, "sandbox": sandbox})


def _list(ctx) -> None:
    """The tools a session here would offer, from the catalog: no spec is imported, and agents are
    only discovered when a tool needs them (a session opens them; a listing need not)."""
    from scv.tools.catalog import LISTING
    from scv.tools.offering import facts, offered

    def agents() -> bool:
        from scv.agents.offered import discover
        return bool(discover(home=scv_home(), settings=ctx.config.agents))

    # A session keeps a job table unless agent.max_background is 0 (scv/tools/services.py).
    fact = functools.cache(facts(ctx, agents=agents, jobs=True))
    shown = [(name, risk, line) for name, (risk, line) in LISTING.items() if offered(name, fact)]
    width = max(len(name) for name, _, _ in shown)
    for name, risk, line in shown:
        click.echo(f"{name:<{width}}  {risk:<10}  {line}")
