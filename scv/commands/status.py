"""`scv status`: delegated runs at work, live agents idle between turns, orphans stopped."""

import sys

import click
import msgspec

from scv.config.load import scv_home
from scv.delegations.listing import counts


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as one JSON object.")
def status_command(as_json: bool) -> None:
    """Count this SCV_HOME's delegations: running, idle, orphans awaiting cleanup, orphans stopped."""
    tally = counts(scv_home())
    if as_json:
        sys.stdout.buffer.write(msgspec.json.encode(tally) + b"\n")
        return
    click.echo(f"delegations: {tally['running']} running, {tally['idle']} idle")
    click.echo(f"orphans: {tally['orphans']} awaiting cleanup, {tally['orphans_stopped']} stopped so far")
