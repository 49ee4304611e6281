"""This machine in a Ray cluster: starting the head, joining as a node with the agents signed in
here, and leaving (running tasks cancelled first, then only the Ray processes SCV started, by
pid). A machine may be the head and a node at once; each has its record under
`$SCV_HOME/cluster/` and a private temporary folder of its own (never /tmp/ray)."""

import json
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scv import __version__
from scv.cluster import WORKSPACE_VARIABLE, processes
from scv.cluster.processes import NodeRecord
from scv.cluster.settings import (HEAD_RESOURCE, ClusterError, default_token, ensure_token, folder,
                                  host_name, label, ray_environment, read_token, slots_resource)
from scv.core.errors import UsageError

HEAD, NODE = "head", "node"


def record_file(home: Path, role: str) -> Path:
    return folder(home) / f"{role}.json"


def read(home: Path, role: str) -> NodeRecord | None:
    return processes.read_record_at(record_file(home, role))


def _check_free(home: Path, role: str) -> None:
    """Refuses a second head (or node) here; clears what a node that died left behind."""
    record = read(home, role)
    if record is None:
        return
    if processes.live(record):
        raise ClusterError(f"this machine already runs an SCV Ray {role} (of the cluster at {record.address}); run "
                           "scv cluster leave first")
    _forget(home, role, record)


def _forget(home: Path, role: str, record: NodeRecord) -> None:
    shutil.rmtree(record.temp_dir, ignore_errors=True)
    try:
        os.unlink(record_file(home, role))
    except FileNotFoundError:
        pass


def _private_temp() -> str:
    # Short, under the system temp folder: Ray's socket paths must stay under 108 bytes.
    return tempfile.mkdtemp(prefix="scv-ray-")


def _start(home: Path, role: str, args: list[str], env: dict[str, str], address: str, token_path: Path,
           **fields) -> NodeRecord:
    temp_dir = _private_temp()
    started = time.time()
    log = folder(home) / f"{role}-start.log"
    try:
        code, session = processes.start_ray([*args, "--temp-dir", temp_dir, "--disable-usage-stats"], env, log)
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    if code != 0:
        processes.stop_session(session, started)
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise ClusterError(f"ray start failed (exit status {code}); nothing was left running. Its last lines "
                           f"(all of it in {log}):\n{processes.tail(log)}")
    record = NodeRecord(role=role, address=address, session=session, started_unix=started, temp_dir=temp_dir,
                        token_file=str(token_path.absolute()), processes=processes.snapshot(session, started),
                        **fields)
    processes.write_record_at(record_file(home, role), record)
    return record


def _labels(role: str, mark: str) -> str:
    return f"scv_version={label(__version__)},scv_role={role},scv_host={label(host_name())},scv_mark={mark}"


def _find_mine(view, mark_owner: str, deadline_seconds: float = 20.0):
    """The node this machine just started, by its mark label, as the GCS lists it."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        for node in view.nodes():
            if node.labels.get("scv_mark") == mark_owner:
                return node
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


def start_head(home: Path, port: int, node_ip: str | None) -> tuple[NodeRecord, bool]:
    from scv.cluster.connect import GcsView, require_ray
    require_ray()
    _check_free(home, HEAD)
    token_path = default_token(home)
    created = ensure_token(token_path)
    mark = secrets.token_hex(4)
    args = ["--head", "--port", str(port), "--num-cpus=0", "--resources", json.dumps({HEAD_RESOURCE: 1}),
            "--include-dashboard=false", "--labels", _labels(HEAD, mark)]
    if node_ip:
        args += ["--node-ip-address", node_ip]
    env = ray_environment(dict(os.environ), token_path)
    record = _start(home, HEAD, args, env, f"{node_ip or '127.0.0.1'}:{port}", token_path)
    try:
        view = GcsView(f"127.0.0.1:{port}", token_path)
        node = _find_mine(view, mark)
    except BaseException:
        processes.stop_node(record)
        _forget(home, HEAD, record)
        raise
    if node is not None:
        record.node_id, record.node_ip = node.id, node.ip
        record.address = f"{node_ip or node.ip}:{port}"
        processes.write_record_at(record_file(home, HEAD), record)
    return record, created


@dataclass
class AgentReadiness:
    slots: dict[str, int]
    refused: list[str]          # "codex: signed out (scv agents login codex)", ...


def ready_agents(home: Path, default_slots: int, requested: dict[str, int]) -> AgentReadiness:
    """The agents installed and signed in here (checked as `scv agents status` checks them)."""
    from scv.agents.status_report import all_statuses
    from scv.core.agents.descriptors import DESCRIPTORS
    unknown = [name for name in requested if name not in DESCRIPTORS]
    if unknown:
        raise UsageError(f"--slots names {', '.join(unknown)}, which SCV does not know; agents are: "
                         f"{', '.join(DESCRIPTORS)}")
    slots, refused = {}, []
    for status in all_statuses(home):
        wanted = requested.get(status.agent, default_slots)
        if not status.installed:
            refused.append(f"{status.agent}: not installed")
        elif status.signed_in is not True:
            advice = f" (scv agents login {status.agent})" if status.signed_in is False else ""
            refused.append(f"{status.agent}: {status.summary}{advice}")
        elif wanted < 1:
            refused.append(f"{status.agent}: --slots {status.agent}=0" if status.agent in requested
                           else f"{status.agent}: agent.max_background is 0 (pass --slots {status.agent}=N)")
        else:
            slots[status.agent] = wanted
            continue
        if requested.get(status.agent, 0) > 0:
            raise ClusterError(f"--slots {status.agent}={requested[status.agent]}, but {refused[-1]}")
    return AgentReadiness(slots, refused)


def join(home: Path, address: str, token_path: Path, node_ip: str | None, workspace: Path,
         slots: dict[str, int]) -> NodeRecord:
    from scv.cluster.connect import GcsView, require_ray
    require_ray()
    _check_free(home, NODE)
    if not slots:
        raise ClusterError("no agent is installed and signed in here, so this machine has nothing to offer")
    read_token(token_path)
    view = GcsView(address, token_path)
    head = view.head()
    if head is None or head.version is None:
        raise ClusterError(f"the Ray cluster at {address} was not started by scv cluster head (its head carries no "
                           "SCV version); start the head with scv cluster head")
    if head.version != label(__version__):
        raise ClusterError(f"the head at {address} runs SCV {head.version} and this machine SCV {__version__}; "
                           "install the same SCV version on every machine of the cluster")
    mark = secrets.token_hex(4)
    args = ["--address", f"{view.host}:{view.port}", "--num-cpus=0",
            "--resources", json.dumps({slots_resource(agent): n for agent, n in slots.items()}),
            "--labels", _labels(NODE, mark)]
    if node_ip:
        args += ["--node-ip-address", node_ip]
    env = ray_environment(dict(os.environ), token_path)
    env[WORKSPACE_VARIABLE] = str(workspace)
    record = _start(home, NODE, args, env, address, token_path, workspace=str(workspace), slots=dict(slots))
    node = _find_mine(view, mark)
    if node is not None:
        record.node_id, record.node_ip = node.id, node.ip
        processes.write_record_at(record_file(home, NODE), record)
    return record


def leave(home: Path) -> list[tuple[str, int, int]]:
    """(role, tasks cancelled, Ray processes stopped) for the node, then the head, of this machine."""
    done = []
    for role in (NODE, HEAD):
        record = read(home, role)
        if record is None:
            continue
        tasks, stopped = processes.stop_node(record)
        _forget(home, role, record)
        done.append((role, tasks, stopped))
    return done


def default_address(home: Path) -> str | None:
    """`auto`: RAY_ADDRESS, else the head this machine started or joined."""
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    for role in (HEAD, NODE):
        record = read(home, role)
        if record is not None and processes.live(record):
            return record.address
    return None

