"""The `scv` command: a click group; each subcommand lives in its own module under scv/commands."""

import importlib
import sys

import click

from scv import __version__
from scv.errors import ScvError


class ScvGroup(click.Group):
    """Loads each subcommand's module only when that command runs (start-up stays fast), and
    turns SCV's own errors into one sentence on stderr and their exit status."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str):
        if name in self.lazy and name not in self.commands:
            module_name, _, attribute = self.lazy[name].partition(":")
            self.add_command(getattr(importlib.import_module(module_name), attribute), name)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ScvError as err:
            click.echo(f"scv: {err}", err=True)
            sys.exit(err.exit_code)


# Every subcommand, by name: "module:attribute". Add new commands here.
COMMANDS = {
    "tool": "scv.commands.tool:tool_command",
    "tools": "scv.commands.tool:tools_command",
    "exec": "scv.commands.exec:exec_command",
    "server": "scv.commands.server:server_command",
    "agents": "scv.commands.agents:agents_command",
    "status": "scv.commands.status:status_command",
    "batch": "scv.commands.batch:batch_command",
    "config": "scv.commands.config:config_command",
    "cluster": "scv.commands.cluster:cluster_command",
    "sandbox": "scv.commands.sandbox:sandbox_command",
}


@click.group(cls=ScvGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="scv")
def main() -> None:
    """SCV: a headless agent runtime. Every tool call runs in its own supervised worker process."""
