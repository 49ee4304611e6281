"""`scv cluster status`: the cluster's nodes as its GCS lists them (agents, slots, tasks running
on each), this machine's own head or node, and this machine's orphans."""

from pathlib import Path
from typing import Any

from scv import __version__
from scv.cluster import node as nodes
from scv.cluster import processes
from scv.cluster.settings import default_token
from scv.core.delegations import records
from scv.core.errors import ScvError
from scv.delegations.listing import describe
from scv.delegations.reconcile import owner_alive, run_gone


def _this_machine(home: Path) -> dict[str, Any]:
    mine = {}
    for role in (nodes.HEAD, nodes.NODE):
        record = nodes.read(home, role)
        if record is None:
            mine[role] = None
            continue
        alive = processes.live(record)
        mine[role] = {"address": record.address, "node_id": record.node_id, "running": bool(alive),
                      "ray_processes": len(alive), "slots": record.slots, "workspace": record.workspace}
    return mine


def orphans(home: Path) -> list[dict[str, Any]]:
    """Delegated runs whose SCV process is gone while a process of theirs still runs. A record
    whose processes are all gone too is only stale: the next SCV process here removes it."""
    return [describe(r) for r in records.all_records(home) if not owner_alive(r) and not run_gone(r)]


def gather(home: Path, address: str | None, token_file: Path | None) -> dict[str, Any]:
    token = token_file or default_token(home)
    chosen = address or nodes.default_address(home)
    report: dict[str, Any] = {"address": chosen, "scv_version": __version__, "nodes": [],
                              "this_machine": _this_machine(home),
                              "orphans": orphans(home)}
    if chosen is None:
        report["error"] = ("no cluster is known here: pass --address HEAD:PORT, or start one with scv cluster head "
                           "or join one with scv cluster join")
        return report
    try:
        from scv.cluster.connect import GcsView
        found = GcsView(chosen, token).nodes()
    except ScvError as err:
        report["error"] = str(err)
        return report
    report["nodes"] = [node.as_dict() for node in found]
    return report


def _agents(node: dict[str, Any]) -> str:
    if not node["slots"]:
        return "-"
    return ", ".join(f"{agent} {node['running'].get(agent, 0)}/{slots}" for agent, slots in node["slots"].items())


def render(report: dict[str, Any]) -> str:
    out = []
    if report.get("error"):
        out.append(f"scv cluster: {report['error']}")
    if report["nodes"]:
        total = sum(sum(n["slots"].values()) for n in report["nodes"])
        busy = sum(sum(n["running"].values()) for n in report["nodes"])
        out.append(f"cluster at {report['address']}: {len(report['nodes'])} node(s), {busy} of {total} slot(s) "
                   "running a task")
        out.append(f"  {'NODE':<28} {'ROLE':<5} {'SCV':<8} AGENTS (running/slots)")
        for node in report["nodes"]:
            name = f"{node['host']}/{node['id'][:8]}"
            role = "head" if node["head"] else "node"
            out.append(f"  {name:<28} {role:<5} {node['scv_version'] or '?':<8} {_agents(node)}")
    for role, mine in report["this_machine"].items():
        if mine is not None:
            state = f"running ({mine['ray_processes']} Ray processes)" if mine["running"] else "not running"
            out.append(f"this machine's {role}: {state}, cluster {mine['address']}")
    orphans = report["orphans"]
    out.append("orphans on this machine: " + (", ".join(row["handle"] for row in orphans) if orphans else "none")
               + (" (scv agents kill --orphans stops them)" if orphans else ""))
    return "\n".join(out)
