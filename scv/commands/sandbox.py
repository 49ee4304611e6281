"""`scv sandbox check`: what this kernel lets the sandbox do, and what a call would get here."""

import sys

import click
import msgspec

from scv.commands.options import workspace_option
from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.errors import ScvError
from scv.sandbox.report import full_report
from scv.session.context import load_context


@click.group("sandbox")
def sandbox_command() -> None:
    """The opt-in OS sandbox of bash and delegated agents ([tools] sandbox)."""


def _yes(value: bool, error: str | None = None) -> str:
    return "yes" if value else f"no ({error})" if error else "no"


def _print(report: dict) -> None:
    k = report["kernel"]
    abi = f"ABI {k['landlock_abi']}" if k["landlock_abi"] else f"missing ({k['landlock_error']})"
    click.echo(f"Landlock:           {abi}")
    click.echo(f"CAP_SYS_ADMIN:      {_yes(k['cap_sys_admin'])}")
    userns = "not needed" if k["cap_sys_admin"] else _yes(k["user_namespace"], k["user_namespace_error"])
    click.echo(f"user namespace:     {userns}")
    click.echo(f"mount namespace:    {_yes(k['mount_namespace'], k['mount_namespace_error'])}")
    click.echo(f"network namespace:  {_yes(k['network_namespace'], k['network_namespace_error'])}")
    c = report["config"]
    click.echo(f"configured:         tools.sandbox = \"{c['mode']}\", sandbox_network = "
               f"{str(c['network']).lower()}" + (f", sandbox_writable = {c['writable']}" if c["writable"] else "")
               + (f", sandbox_fallback = \"{c['fallback']}\"" if c["fallback"] != "refuse" else ""))
    for name, own in c["agents"].items():
        click.echo(f"                    [agents.{name}] sandbox = \"{own['mode']}\", network "
                   f"{'allowed' if own['network'] else 'off'}")
    call = report["call"]
    if call.get("preview"):
        click.echo(f"a {call['tool']} call runs without a sandbox; with sandbox = \"workspace-write\" it would get:")
    else:
        click.echo(f"a {call['tool']} call gets:")
    click.echo(f"  tier:             {call['tier']}")
    for gap in report["tiers"][call["tier"]]:
        click.echo(f"  not covered:      {gap}")
    if "refused" in call:
        click.echo(f"  refused: {call['refused']}")
        return
    ll = call["landlock"]
    click.echo(f"  mode:             {call['mode']}, {call['network_label']}")
    network = {"namespace": "a fresh network namespace" + (" and Landlock TCP rules" if ll["handled_net"] else ""),
               "landlock": "Landlock TCP rules, and a seccomp filter allowing TCP sockets only",
               "none": "not blocked"}[call["network_with"]]
    click.echo(f"  network:          {network}")
    hiding = ("empty read-only mounts in a private mount namespace" if call["hide_with"] == "mount"
              else "Landlock rules granting the siblings along each path")
    click.echo(f"  secrets hidden by {hiding}" + (", in the worker's own user namespace" if call["user_namespace"]
                                                 else ""))
    click.echo("  metadata:         " + ("every mount read-only but the writable folders" if call["hide_with"] == "mount"
                                      else "not protected outside the writable folders (no mount namespace)"))
    click.echo("  UNIX sockets:     none can be made (seccomp), socketpair still works")
    click.echo(f"  landlock:         ABI {ll['abi']}, {ll['rules']} rules; handles {', '.join(ll['handled_fs'])}"
               + (f"; {', '.join(ll['handled_net'])}" if ll["handled_net"] else "")
               + (f"; scoped: {', '.join(ll['scoped'])}" if ll["scoped"] else ""))
    click.echo("  writable:         " + "\n                    ".join(call["writable"]))
    click.echo("  unreadable:       " + ("\n                    ".join(call["hidden"]) or "(none found)"))
    for text in call["dropped"]:
        if text not in report["tiers"][call["tier"]]:
            click.echo(f"  dropped:          {text}")


@sandbox_command.command("check")
@workspace_option
@click.option("--agent", "agent", type=click.Choice(sorted(DESCRIPTORS)), default=None,
              help="Show what a call of this delegated agent would get instead of a bash call.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def check_command(workspace: str | None, agent: str | None, as_json: bool) -> None:
    """Print the Landlock ABI, namespace support, and what a call would get here (its writable
    folders, unreadable locations, network block, and what this kernel drops). Exit status 1 when
    the configured sandbox would refuse the call."""
    try:
        ctx = load_context(workspace)
        report = full_report(ctx.config, ctx.workspace, agent)
    except ScvError as err:
        if not as_json:
            raise
        sys.stdout.buffer.write(msgspec.json.encode({"error": str(err)}) + b"\n")
        click.echo(f"scv: {err}", err=True)
        sys.exit(err.exit_code)
    if as_json:
        sys.stdout.buffer.write(msgspec.json.encode(report) + b"\n")
    else:
        _print(report)
    refused = "refused" in report["call"] and not report["call"].get("preview")
    sys.exit(1 if refused else 0)
