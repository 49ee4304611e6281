"""`scv cluster head|join|status|leave`: this machine as a node of a Ray cluster for `scv batch
--engine ray` (logic in scv/cluster/; Ray itself is imported only once a command needs it)."""

import sys
from pathlib import Path

import click
import msgspec

from scv import __version__
from scv.cluster import node as nodes
from scv.cluster.settings import DEFAULT_PORT, ClusterError, default_token, fingerprint, read_token
from scv.config.load import scv_home
from scv.core.errors import UsageError

TRUST_NOTE = ("Ray listens on every network interface whatever address it is given: the token is the only guard, "
              "so keep the cluster on a trusted network and the token file private (mode 0600).")


def _emit(value: dict) -> None:
    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")
    sys.stdout.flush()


def _slots(values: tuple[str, ...]) -> dict[str, int]:
    slots = {}
    for value in values:
        name, sep, count = value.partition("=")
        if not sep or not name or not count.isdigit() or int(count) > 64:
            raise UsageError(f"--slots {value!r} is not AGENT=N with N from 0 to 64 (such as codex=2)")
        slots[name] = int(count)
    return slots


@click.group("cluster")
def cluster_command() -> None:
    """This machine in a Ray cluster for scv batch --engine ray: start the head, join it with the
    agents signed in here, see the nodes, leave (needs scv[ray])."""


@cluster_command.command("head")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="The port of the cluster's GCS, which nodes and drivers connect to.")
@click.option("--node-ip", metavar="ADDR", default=None, help="The address other machines reach this one at.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"address\", \"node_id\", \"token_file\", \"join\"}.")
def head_command(port: int, node_ip: str | None, as_json: bool) -> None:
    """Start the cluster's head here: Ray with token authentication and no CPUs or agents of its
    own (tasks run on the nodes that join). Prints the scv cluster join line for the others."""
    home = scv_home()
    record, created = nodes.start_head(home, port, node_ip)
    token = record.token_file
    join_line = f"scv cluster join {record.address} --token-file <the copied token file>"
    if as_json:
        _emit({"address": record.address, "node_id": record.node_id, "token_file": token,
               "token_fingerprint": fingerprint(read_token(Path(token))), "join": join_line})
        return
    made = "a new token" if created else "the existing token"
    click.echo(f"scv cluster: head started at {record.address} (node {(record.node_id or '?')[:8]}, SCV "
               f"{__version__}) with {made} in {token} (fingerprint {fingerprint(read_token(Path(token)))}).")
    click.echo("On each machine that runs agents, copy that token file there (keep it mode 0600), then run:")
    click.echo(f"  {join_line}")
    click.echo(TRUST_NOTE)


@cluster_command.command("join")
@click.argument("address", metavar="HEAD:PORT")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="The head's token, copied here (default $SCV_HOME/cluster/token).")
@click.option("--node-ip", metavar="ADDR", default=None, help="The address other machines reach this one at.")
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="The folder task cwds resolve against here (default: the current folder).")
@click.option("--slots", "slot_values", multiple=True, metavar="AGENT=N",
              help="Tasks of AGENT this machine runs at once (default agent.max_background); 0 offers none.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"address\", \"node_id\", \"slots\", \"workspace\"}.")
def join_command(address: str, token_file: Path | None, node_ip: str | None, workspace: Path | None,
                 slot_values: tuple[str, ...], as_json: bool) -> None:
    """Join the cluster at HEAD:PORT as a node offering the agents installed and signed in here."""
    from scv.config.load import load_config
    from scv.session.context import resolve_workspace
    home = scv_home()
    root = resolve_workspace(str(workspace) if workspace else None)
    requested = _slots(slot_values)
    default_slots = load_config(root).agent.max_background
    ready = nodes.ready_agents(home, default_slots, requested)
    if not ready.slots:
        raise ClusterError("no agent is installed and signed in on this machine, so it has nothing to offer the "
                           "cluster: " + "; ".join(ready.refused))
    record = nodes.join(home, address, token_file or default_token(home), node_ip, root, ready.slots)
    if as_json:
        _emit({"address": record.address, "node_id": record.node_id, "slots": record.slots,
               "workspace": record.workspace, "not_offered": ready.refused})
        return
    offered = ", ".join(f"{agent} {n}" for agent, n in record.slots.items())
    click.echo(f"scv cluster: joined {record.address} as node {(record.node_id or '?')[:8]} offering {offered}; "
               f"task folders resolve against {record.workspace}")
    for reason in ready.refused:
        click.echo(f"  not offered: {reason}")


@cluster_command.command("status")
@click.option("--address", metavar="HEAD:PORT", default=None,
              help="The cluster's head (default: RAY_ADDRESS, else the head this machine started or joined).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="The cluster's token (default $SCV_HOME/cluster/token).")
@click.option("--json", "as_json", is_flag=True, help="Print {\"address\", \"nodes\", \"this_machine\", \"orphans\"}.")
def status_command(address: str | None, token_file: Path | None, as_json: bool) -> None:
    """The cluster's nodes, their agents and slots, tasks running on each, and this machine's
    orphans (delegated agents whose SCV process is gone)."""
    from scv.cluster.connect import require_ray
    from scv.cluster.status import gather, render
    require_ray()
    report = gather(scv_home(), address, token_file)
    if as_json:
        _emit(report)
    else:
        click.echo(render(report))
    if report.get("error"):
        sys.exit(1)


@cluster_command.command("leave")
@click.option("--json", "as_json", is_flag=True, help="Print {\"left\": [{\"role\", \"tasks_cancelled\", ...}]}.")
def leave_command(as_json: bool) -> None:
    """Stop this machine's part of the cluster: its running tasks are cancelled (each tears its
    agent down), then the Ray processes SCV started here, by pid."""
    done = nodes.leave(scv_home())
    if as_json:
        _emit({"left": [{"role": role, "tasks_cancelled": tasks, "ray_processes_stopped": stopped}
                        for role, tasks, stopped in done]})
        return
    if not done:
        click.echo("scv cluster: this machine runs no SCV Ray node; nothing to stop")
    for role, tasks, stopped in done:
        click.echo(f"scv cluster: left as {role}: {tasks} running task(s) cancelled, {stopped} Ray process(es) "
                   "stopped")
