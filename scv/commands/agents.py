"""`scv agents ps|kill|gc`: the delegated agents of this `$SCV_HOME`, seen from any SCV process."""

import sys
from pathlib import Path

import click
import msgspec

from scv.config import scv_home
from scv.delegations import records, transcripts_gc
from scv.delegations.listing import describe, rows
from scv.delegations.reconcile import reconcile, stop_and_remove
from scv.errors import ScvError, UsageError
from workers.agents.descriptors import DESCRIPTORS


class NotFound(ScvError):
    exit_code = 1


@click.group("agents")
def agents_command() -> None:
    """Delegated agents: list the running ones, stop them, remove old transcripts."""


def _emit(value: dict) -> None:
    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
    sys.stdout.flush()


def _age(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


@agents_command.command("ps")
@click.option("--all", "show_all", is_flag=True, help="Also list orphans awaiting cleanup.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"delegations\": [...]} as JSON.")
def ps_command(show_all: bool, as_json: bool) -> None:
    """List running delegations (with --all, orphans whose SCV process is gone too)."""
    found = rows(scv_home(), include_orphans=show_all)
    if as_json:
        _emit({"delegations": found})
        return
    if not found:
        click.echo("no delegated agents are running" + ("" if show_all else " (--all also lists orphans)"))
        return
    click.echo(f"{'HANDLE':<18} {'AGENT':<6} {'STATE':<10} {'PID':>7} {'AGE':>5}  {'TURN':<12} CWD")
    for row in found:
        turn = f"{row['conversation']}#{row['turn']}" if row.get("conversation") else "-"
        click.echo(f"{row['handle']:<18} {row['agent']:<6} {row['state']:<10} {row['pid']:>7} "
                   f"{_age(row['elapsed_seconds']):>5}  {turn:<12} {row['cwd']}")


@agents_command.command("kill")
@click.argument("handle", required=False)
@click.option("--orphans", is_flag=True, help="Stop every orphan (a run whose SCV process is gone).")
@click.option("--json", "as_json", is_flag=True, help="Print {\"stopped\": [...], \"signalled\": N} as JSON.")
def kill_command(handle: str | None, orphans: bool, as_json: bool) -> None:
    """Stop one delegation (its process group, then every process tagged with it), or every orphan."""
    home = scv_home()
    if orphans == (handle is not None):
        raise UsageError("pass either a delegation HANDLE (see scv agents ps) or --orphans")
    if orphans:
        done = reconcile(home)
        if as_json:
            _emit({"stopped": list(done.orphans)})
            return
        click.echo(f"stopped {len(done.orphans)} orphan(s)" + (f": {', '.join(done.orphans)}" if done.orphans
                                                               else ""))
        return
    try:
        records.check_handle(handle)
    except ValueError as err:
        raise UsageError(f"{err}; see scv agents ps") from None
    record = records.read(home, handle)
    if record is None:
        raise NotFound(f"no delegation {handle} is recorded; scv agents ps --all lists them")
    row = describe(record)
    if row["state"] != "orphan":
        records.mark_stopping(home, handle)     # its worker reports the run as cancelled
    signalled = stop_and_remove(home, record)
    if as_json:
        _emit({"stopped": [handle], "agent": row["agent"], "state": row["state"], "signalled": signalled})
        return
    click.echo(f"stopped {handle} ({row['agent']}, {row['state']}): {signalled} process(es) signalled")


@agents_command.command("gc")
@click.argument("agent", required=False)
@click.option("--dry-run", is_flag=True, help="Only show what would be removed, per agent.")
@click.option("--older-than", default=transcripts_gc.DEFAULT_AGE, show_default=True, metavar="AGE",
              help="Remove transcripts last written before this age (such as 7d, 12h; at least 1h).")
@click.option("--json", "as_json", is_flag=True, help="Print what was (or would be) removed as JSON.")
def gc_command(agent: str | None, dry_run: bool, older_than: str, as_json: bool) -> None:
    """Remove old transcripts from the agents' private homes; live conversations' are kept."""
    known = list(transcripts_gc.transcript_folders(Path("/")))
    if agent is not None and agent not in known:
        extra = " (it keeps no transcripts SCV knows)" if agent in DESCRIPTORS else ""
        raise UsageError(f"agent {agent!r} has no transcripts to collect{extra}; choose one of: {', '.join(known)}")
    try:
        age = transcripts_gc.parse_age(older_than)
    except ValueError as err:
        raise UsageError(str(err)) from None
    swept = transcripts_gc.sweep(scv_home(), age, [agent] if agent else None, dry_run=dry_run)
    if as_json:
        _emit({"dry_run": dry_run, "agents": [{"agent": r.agent, "files": [str(f) for f in r.files],
                                               "bytes": r.bytes, "kept_live": r.kept_live} for r in swept]})
        return
    verb = "would remove" if dry_run else "removed"
    for result in swept:
        kept = f", kept {result.kept_live} of live conversations" if result.kept_live else ""
        click.echo(f"{result.agent}: {verb} {len(result.files)} file(s), {result.bytes} bytes{kept}")
        if dry_run:
            for path in result.files:
                click.echo(f"  {path}")
