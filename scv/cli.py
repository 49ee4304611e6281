"""The `scv` command: a click group; each subcommand lives in its own module under scv/commands."""

import importlib

import click

from scv import __version__
from scv.core.errors import ScvError
from scv.lifecycle import QUICK_EXIT, exit_on_error, freeze_start_up, quick_exit


class ScvGroup(click.Group):
    """Loads each subcommand's module only when that command runs (start-up stays fast), and
    turns SCV's own errors into one sentence on stderr and their exit status."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, lazy_help: dict[str, str] | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}
        self.lazy_help = lazy_help or {}
        self.ran: str | None = None      # the subcommand this process ran

    def __call__(self, *args, **kwargs):
        """The process entry (`python -m scv`, the installed `scv`). A command that has nothing
        left to do once its output is written (QUICK_EXIT, or none: help, version, a usage
        error) exits without the interpreter's teardown of every module, which costs a short
        command a good part of its time. Tests call `main` through click's runner instead."""
        try:
            return super().__call__(*args, **kwargs)
        except SystemExit as done:
            if self.ran is not None and self.ran not in QUICK_EXIT:
                raise
            quick_exit(done.code)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str):
        if name in self.lazy and name not in self.commands:
            module_name, _, attribute = self.lazy[name].partition(":")
            self.add_command(getattr(importlib.import_module(module_name), attribute), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """`scv --help` lists the subcommands from COMMAND_HELP, importing none of their modules."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            if name in self.commands or name not in self.lazy_help:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
            else:
                # A stand-in command shortens the sentence exactly as the real one would.
                rows.append((name, click.Command(name, help=self.lazy_help[name]).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        self.ran = name
        freeze_start_up()
        return name, command, rest

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ScvError as err:
            exit_on_error(err)


# Every subcommand, by name: "module:attribute". Add new commands here.
COMMANDS = {
    "tool": "scv.commands.tool:tool_command",
    "tools": "scv.commands.tools:tools_command",
    "exec": "scv.commands.exec:exec_command",
    "server": "scv.commands.server:server_command",
    "mcp": "scv.commands.mcp:mcp_command",
    "agents": "scv.commands.agents:agents_command",
    "status": "scv.commands.status:status_command",
    "batch": "scv.commands.batch:batch_command",
    "batch-report": "scv.commands.batch_report:batch_report_command",
    "config": "scv.commands.config:config_command",
    "cluster": "scv.commands.cluster:cluster_command",
    "sandbox": "scv.commands.sandbox:sandbox_command",
}
# What `scv --help` says of each, without importing it: the first sentence of its docstring
# (tests/test_cli_startup.py checks they agree).
COMMAND_HELP = {
    "tool": "Run one tool call and print its result as one JSON object.",
    "tools": "List the tools with their risk (and, with --json, their JSON Schema).",
    "exec": "Run one headless turn: the model calls tools until it replies; the reply goes to stdout.",
    "server": "Serve one client over the SCV protocol until it closes stdin.",
    "mcp": "Serve SCV's agent tools to one MCP host over stdio until it closes stdin.",
    "agents": "Delegated agents: sign them in, list the running ones, stop them, remove old transcripts.",
    "status": "Count this SCV_HOME's delegations: running, idle, orphans awaiting cleanup, orphans stopped.",
    "batch": "Run a batch of delegated agent calls: FILE has one JSON object per line with an id, a prompt and "
             "optionally agent, cwd, model, effort, timeout_seconds, and the batch's own isolate, base, verify, "
             "verify_timeout_seconds and attempts (docs/batch.md).",
    "batch-report": "Summarise scv batch's results file for people (Markdown) and CI (JUnit XML).",
    "config": "The configuration SCV uses: $SCV_HOME/config.toml and the workspace's .scv/config.toml.",
    "cluster": "This machine in a Ray cluster for scv batch --engine ray: start the head, join it with the agents "
               "signed in here, see the nodes, leave (needs scv[ray]).",
    "sandbox": "The opt-in OS sandbox of bash and delegated agents ([tools] sandbox).",
}


@click.group(cls=ScvGroup, lazy=COMMANDS, lazy_help=COMMAND_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="scv")
def main() -> None:
    """SCV: a headless agent runtime. Every tool call runs in its own supervised worker process."""
