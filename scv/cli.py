"""The `scv` command: a click group; each subcommand lives in its own module under scv/commands."""

import sys

import click

from scv import __version__
from scv.errors import ScvError


class ScvGroup(click.Group):
    """Turns SCV's own errors into one sentence on stderr and their exit status."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ScvError as err:
            click.echo(f"scv: {err}", err=True)
            sys.exit(err.exit_code)


@click.group(cls=ScvGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="scv")
def main() -> None:
    """SCV: a headless agent runtime. Every tool call runs in its own supervised worker process."""


def _register() -> None:
    from scv.commands import tool
    main.add_command(tool.tool_command)
    main.add_command(tool.tools_command)
    from scv.commands import exec as exec_
    main.add_command(exec_.exec_command)
    from scv.commands import server
    main.add_command(server.server_command)


_register()
