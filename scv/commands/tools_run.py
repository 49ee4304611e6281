"""The run of `scv tools`: the tools a session here would offer, with their risk (and JSON Schema).
scv/commands/tools.py declares the command for click; SIGNATURE is the same for the plain reading."""

import functools
import sys

from scv.commands.output import emit_json
from scv.config.load import scv_home
from scv.core.errors import ScvError
from scv.lifecycle import say
from scv.plain_argv import Option, Signature, text
from scv.session.context import load_context


# scv/commands/tools.py's parameters, for scv/entry.py (tests/test_plain_argv.py checks
# they are click's).
SIGNATURE = Signature(arguments=(), required=0, options=(
    Option("workspace", ("-C", "--workspace"), text),
    Option("as_json", ("--json",)),
))


def run_tools(workspace: str | None, as_json: bool) -> None:
    """The run of `scv tools` with its parameters read (scv/commands/tools.py says each)."""
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
        say(f"scv: {err}", err=True)
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
        say(f"{name:<{width}}  {risk:<10}  {line}")
