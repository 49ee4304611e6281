"""`scv exec PROMPT` for click: the options and their help. The run itself is
scv/commands/exec_run.py, which a plain command line reaches without click (scv/entry.py)."""

from pathlib import Path

import click

from scv.commands.exec_run import Output, run_exec
from scv.commands.options import workspace_option


class _ExecCommand(click.Command):
    """With --json, a command line that click refuses still gives CI its one `error` event."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        wants_json = "--json" in args
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            if wants_json:
                Output(True).emit("error", {"error": err.format_message()})
            raise


@click.command("exec", cls=_ExecCommand)
@click.argument("prompt", required=False)
@click.option("--script", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Run offline: FILE is a JSONL script of the model's turns (see examples/).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON event per line instead of the reply.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Cancel the run after this many seconds (exit status 124).")
@click.option("--model", default=None, help="The model, instead of the provider's configured one.")
@click.option("--auto-approve", is_flag=True, help="Approve every call that the policy would ask about.")
@click.option("--output-schema", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="The final reply must be a JSON document valid against FILE (JSON Schema, Draft 2020-12); "
                   "stdout gets only the document, compact.")
@click.option("--mcp-config", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help='MCP servers to use as tools, in the {"mcpServers": {...}} JSON other hosts use (besides '
                   "[mcp_servers] in the user's config.toml; see docs/mcp.md).")
@click.option("--max-turns", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop the run after N model responses, delegated agents' included (exit status 3).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop the run once it has used N input plus output tokens, delegated agents' included.")
@click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
              help="Stop the run once it has cost this many US dollars (reported, or from [prices]).")
@workspace_option
def exec_command(prompt: str | None, script: Path | None, as_json: bool, timeout: float | None, model: str | None,
                 auto_approve: bool, output_schema: Path | None, mcp_config: Path | None, max_turns: int | None,
                 max_tokens: int | None, max_cost_usd: float | None, workspace: str | None) -> None:
    """Run one headless turn: the model calls tools until it replies; the reply goes to stdout.

    PROMPT is the task; "-" reads it from stdin. With --script the prompt is optional.

    \b
    Exit status:
      0    the turn completed
      1    the turn failed (provider error, turn limit, script ran out)
      2    bad usage or configuration (an unusable --output-schema too, or a required MCP server that did not
           start); nothing ran
      3    a limit (--max-turns, --max-tokens, --max-cost-usd, [limits]) stopped the run
      4    schema_invalid: with --output-schema, the reply did not validate after one repair turn
      124  timed out (--timeout); the running call was cancelled
      130  interrupted by SIGINT, 143 by SIGTERM; the running call was cancelled
    """
    run_exec(prompt, script, as_json, timeout, model, auto_approve, output_schema, mcp_config, max_turns, max_tokens,
             max_cost_usd, workspace)
