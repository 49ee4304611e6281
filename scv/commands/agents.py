"""`scv agents ps|kill|gc`: the delegated agents of this `$SCV_HOME`, seen from any SCV process."""

import json
import os
import sys
from pathlib import Path

import click
import msgspec

from scv.agents import dsh_key, grok_import, pi_setup, scv_import
from scv.agents.imports import default_source, import_codex
from scv.agents.login import (LOGIN_ARGS, LOGOUT_ARGS, descriptor_for, prepare_private_home, require_executable,
                              run_attached, run_own_command, signin_environment)
from scv.agents.pi_import import import_scv_provider
from scv.agents.secret_input import Answers
from scv.agents.status_report import all_statuses
from scv.config.load import scv_home
from scv.core.agents.descriptors import DESCRIPTORS, DSH, PI, SCV
from scv.core.delegations import records
from scv.core.errors import ScvError, UsageError
from scv.delegations import transcripts_gc
from scv.delegations.listing import describe, rows
from scv.delegations.reconcile import reconcile, stop_and_remove


class NotFound(ScvError):
    exit_code = 1


@click.group("agents")
def agents_command() -> None:
    """Delegated agents: sign them in, list the running ones, stop them, remove old transcripts."""


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
    """Remove old transcripts from the agents' private homes (live conversations' are kept), and the
    git worktrees of scv batch runs whose driver is gone (their branches are kept)."""
    known = list(transcripts_gc.transcript_folders(Path("/")))
    if agent is not None and agent not in known:
        extra = " (it keeps no transcripts SCV knows)" if agent in DESCRIPTORS else ""
        raise UsageError(f"agent {agent!r} has no transcripts to collect{extra}; choose one of: {', '.join(known)}")
    try:
        age = transcripts_gc.parse_age(older_than)
    except ValueError as err:
        raise UsageError(str(err)) from None
    swept = transcripts_gc.sweep(scv_home(), age, [agent] if agent else None, dry_run=dry_run)
    from scv.batch import worktree
    worktrees = worktree.sweep(scv_home(), dry_run=dry_run) if agent is None else []
    if as_json:
        _emit({"dry_run": dry_run, "agents": [{"agent": r.agent, "files": [str(f) for f in r.files],
                                               "bytes": r.bytes, "kept_live": r.kept_live} for r in swept],
               "worktrees": worktrees})
        return
    verb = "would remove" if dry_run else "removed"
    for found in worktrees:
        click.echo(f"worktree: {verb} {found['path']} (repository {found['repository']}, branch {found['branch']} "
                   "kept)")
    for result in swept:
        kept = f", kept {result.kept_live} of live conversations" if result.kept_live else ""
        click.echo(f"{result.agent}: {verb} {len(result.files)} file(s), {result.bytes} bytes{kept}")
        if dry_run:
            for path in result.files:
                click.echo(f"  {path}")


# --- Signing in the delegated agents (logic in scv/agents/login.py, status_report.py, imports.py) ---

def _exit(status: int) -> None:
    if status:
        sys.exit(status)


@agents_command.command("login")
@click.argument("name", metavar="AGENT")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")
@click.option("--openai-compatible", is_flag=True,
              help="pi only: point pi at an OpenAI-compatible endpoint (asks for what is missing, then the key).")
@click.option("--base-url", metavar="URL", help="pi --openai-compatible: the endpoint's base URL.")
@click.option("--wire-api", metavar="API", help="pi --openai-compatible: responses or chat.")
@click.option("--model", metavar="ID", help="pi --openai-compatible: the default model.")
def login_command(name: str, extra: tuple[str, ...], openai_compatible: bool, base_url: str | None,
                  wire_api: str | None, model: str | None) -> None:
    """Sign AGENT in inside its private SCV home (claude, codex, grok: their own login command, with
    extra arguments after --; dsh: asks for the API key; pi: opens pi for /login; scv: copies SCV's
    own active provider)."""
    descriptor_for(name)
    home, environ = scv_home(), dict(os.environ)
    pi_options = base_url is not None or wire_api is not None or model is not None
    if name != PI and (openai_compatible or pi_options):
        raise UsageError("--openai-compatible, --base-url, --wire-api and --model are for scv agents login pi only")
    if pi_options and not openai_compatible:
        raise UsageError("--base-url, --wire-api and --model go with --openai-compatible")
    if name in LOGIN_ARGS:
        _exit(run_own_command(name, LOGIN_ARGS, extra, home, environ))
        return
    if name == SCV:
        if extra:
            raise UsageError("scv agents login scv takes no extra arguments: it copies SCV's own active provider "
                             "(the same as scv agents import scv)")
        _import_scv()
        return
    if name == DSH:
        if extra:
            raise UsageError("a key is never accepted as an argument (it would stay in shell history and ps); run "
                             "scv agents login dsh and type it when asked, or pipe it on stdin")
        dsh_key.check_editable(home)            # before the key is asked for
        path = dsh_key.store_key(home, Answers().secret("DeepSeek API key"))
        click.echo(f"dsh: API key stored in {path} (mode 0600)")
        return
    if openai_compatible:
        if extra:
            raise UsageError("scv agents login pi --openai-compatible takes no extra arguments; a key is never "
                             "accepted as an argument (type it when asked, or pipe it on stdin)")
        answers = Answers()
        url = pi_setup.check_base_url(base_url or answers.value("base URL (such as https://relay.example/v1)"))
        wire = pi_setup.check_wire_api(wire_api or answers.value("wire API (responses or chat)"))
        chosen = pi_setup.check_model(model or answers.value("default model"))
        key = answers.secret("API key")
        pi_setup.configure(home, base_url=url, wire_api=wire, model=chosen, key=key)
        click.echo(f"pi: provider {pi_setup.PROVIDER} ({pi_setup.WIRE_APIS[wire]} at {url}) is the default, "
                   f"model {chosen}; files in {pi_setup.folder(home)} (mode 0600)")
        return
    descriptor = descriptor_for(PI)
    executable = require_executable(descriptor, environ)
    private = prepare_private_home(home, descriptor)
    click.echo("pi opens in its private SCV home: run /login, pick a provider and sign in, then /quit.", err=True)
    _exit(run_attached([executable, *extra], signin_environment(descriptor, environ, home), private))


@agents_command.command("logout")
@click.argument("name", metavar="AGENT")
def logout_command(name: str) -> None:
    """Sign AGENT out of its private SCV home (claude, codex, grok: their own logout command; dsh:
    removes its key file; pi: removes its stored sign-ins and SCV's endpoint; scv: removes its
    config.toml)."""
    descriptor_for(name)
    home = scv_home()
    if name in LOGOUT_ARGS:
        _exit(run_own_command(name, LOGOUT_ARGS, (), home, dict(os.environ)))
    elif name == DSH:
        click.echo("dsh: API key removed" if dsh_key.remove_key(home) else "dsh: no API key was stored")
    elif name == SCV:
        click.echo(f"scv: removed {scv_import.destination(home)}" if scv_import.remove(home)
                   else "scv: no provider was stored")
    else:
        removed = pi_setup.remove(home)
        click.echo(f"pi: removed {', '.join(removed)}" if removed else "pi: nothing was stored")


@agents_command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print {\"agents\": [...]} as JSON.")
def status_command(as_json: bool) -> None:
    """Every agent's sign-in state in its private SCV home, never a key or an account name."""
    statuses = all_statuses(scv_home())
    if as_json:
        _emit({"agents": [s.as_dict() for s in statuses]})
        return
    for s in statuses:
        advice = f" (scv agents login {s.agent})" if s.installed and s.signed_in is False else ""
        click.echo(f"{s.agent:<7}{s.summary}{advice}")
        if s.imported:
            click.echo(f"{'':<7}imported from {s.imported['source']}: {s.imported['detail']}")


@agents_command.command("import")
@click.argument("name", metavar="AGENT", type=click.Choice(["codex", "grok", "pi", "scv"]))
@click.option("--from", "source", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="codex: your own Codex folder (default: $CODEX_HOME, or ~/.codex); grok: your own Grok "
                   "folder (default: $GROK_HOME, or ~/.grok).")
@click.option("--from-scv-provider", is_flag=True, help="pi: use SCV's own active provider (required for pi).")
def import_command(name: str, source: Path | None, from_scv_provider: bool) -> None:
    """Copy a setup into an agent's private SCV home: codex gets your own Codex config.toml (and
    auth.json when it holds an API key); grok gets your own Grok config.toml, merged by top-level
    table (yours win); pi --from-scv-provider and scv get SCV's active provider. Re-run it after
    changing the source."""
    if name == PI:
        if not from_scv_provider or source is not None:
            raise UsageError("scv agents import pi takes --from-scv-provider (and no --from); to sign pi in "
                             "otherwise, run scv agents login pi")
        provider = import_scv_provider(scv_home(), dict(os.environ))
        click.echo(f"pi: provider {pi_setup.PROVIDER} is SCV's provider {provider.name} "
                   f"({pi_setup.WIRE_APIS[provider.wire_api]} at {provider.base_url}), model {provider.model}; "
                   f"key stored in {pi_setup.folder(scv_home())} (mode 0600)")
        return
    if from_scv_provider:
        raise UsageError("--from-scv-provider is for scv agents import pi only")
    if name == SCV:
        if source is not None:
            raise UsageError("scv agents import scv takes no --from: it copies SCV's own active provider")
        _import_scv()
        return
    if name == "grok":
        _import_grok(source if source is not None else grok_import.default_source(dict(os.environ)))
        return
    chosen = source if source is not None else default_source(dict(os.environ))
    report = import_codex(scv_home(), chosen)
    click.echo(f"codex: imported {' and '.join(report.copied)} from {chosen} (mode 0600)")
    for key, value in report.settings.items():
        click.echo(f"  {key} = {value}")
    click.echo(f"  {report.auth_note}")
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)


def _import_grok(source: Path) -> None:
    done = grok_import.import_grok(scv_home(), source)
    click.echo(f"grok: imported {grok_import.CONFIG} from {source} into {done.destination} (mode 0600)")
    if done.kept:
        click.echo(f"  kept from SCV's copy: {', '.join(done.kept)}")
    click.echo(f"  default model: {json.dumps(done.default_model)}" if done.default_model
               else "  no default model ([models] default is not set)")
    for profile in done.profiles:
        mark = " (default)" if profile.default else ""
        click.echo(f"  profile {json.dumps(profile.name)}: model {json.dumps(profile.model)}, {profile.key}{mark}")
    if done.auth_note:
        click.echo(f"  {done.auth_note}")
    for warning in done.warnings:
        click.echo(f"warning: {warning}", err=True)


def _import_scv() -> None:
    done = scv_import.import_scv(scv_home(), dict(os.environ))
    provider = done.provider
    click.echo(f"scv: the nested SCV uses SCV's provider {provider.name} ({provider.profile.wire_api} API at "
               f"{provider.host}), model {provider.profile.model}; key stored in {done.destination} (mode 0600)")
    if done.kept:
        click.echo(f"  kept from its own config: {', '.join(done.kept)}")
    if provider.hosted_search:
        click.echo('  [web] search = "provider" (hosted search, as in SCV\'s own config)')
