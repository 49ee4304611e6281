"""Reaching a Ray cluster as a client; the one module (with the Ray engine's) that imports ray.

Ray alone takes about 21 s to say `ConnectionError` for an address nobody answers and for a
wrong token alike, so a client first opens a TCP connection (3 s), then asks the GCS for the
cluster id with the token (Ray answers a wrong token at once), and only then connects: a failed
connect is one sentence naming the address and the token file, well within 25 s.

The GCS view (`nodes()`) needs no Ray node on this machine, so `scv cluster join` and `status`
use it; a batch driver (`ray.init`) must run on a node of the cluster (the head, typically)."""

import importlib.util
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scv.cluster.settings import (AGENT_RESOURCE, HEAD_RESOURCE, NAMESPACE, ClusterError, parse_address,
                                  ray_environment, read_token)
from scv.core.errors import UsageError

TCP_SECONDS = 3.0
GCS_SECONDS = 15.0


class RayMissing(UsageError):
    pass


def require_ray() -> None:
    try:
        found = importlib.util.find_spec("ray")
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise RayMissing("Ray is not installed here; install scv[ray] (pip install 'scv[ray]'; in a checkout, "
                         ".venv/bin/pip install 'ray==2.60.*') to use --engine ray and scv cluster")


def import_ray() -> Any:
    """`import ray`, once this process's Ray environment is set (`client_environment`): a broken
    install (a missing shared library, a protobuf or grpcio version clash) raises anything at all
    on import, and says so here in one sentence instead of a traceback."""
    require_ray()
    try:
        import ray
    except Exception as exc:
        text = str(exc).strip()
        first = text.splitlines()[0][:200] if text else type(exc).__name__
        raise RayMissing(f"Ray could not be imported ({first}); reinstall scv[ray]") from None
    return ray


def client_environment(token_path: Path) -> None:
    """This process as a Ray client: set before ray is imported (Ray reads it once)."""
    read_token(token_path)
    env = ray_environment(dict(os.environ), token_path)
    for name in set(os.environ) - set(env):
        del os.environ[name]
    os.environ.update(env)


@dataclass
class NodeInfo:
    id: str
    host: str
    ip: str
    head: bool
    version: str | None
    role: str | None
    slots: dict[str, int] = field(default_factory=dict)
    running: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "ip": self.ip, "head": self.head, "scv_version": self.version,
                "role": self.role, "slots": self.slots, "running": self.running}


def _gcs_client(host: str, port: int, token_path: Path):
    address = f"{host}:{port}"
    try:
        socket.create_connection((host, port), timeout=TCP_SECONDS).close()
    except OSError as err:
        raise ClusterError(f"nothing answers at {address} ({err.strerror or err}); check the address and that scv "
                           f"cluster head runs there (token file {token_path})") from None
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError
    found: dict[str, Any] = {}

    def ask() -> None:
        try:
            client = GcsClient(address=address)
            found["id"] = client.cluster_id
            found["client"] = client
        except AuthenticationError:
            found["error"] = (f"the cluster at {address} refused the token in {token_path}; copy the head's token "
                              "file ($SCV_HOME/cluster/token on the head) here and pass it with --token-file")
        except Exception as exc:        # Ray's RpcError and friends: one sentence, not a traceback
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            found["error"] = (f"could not reach the Ray cluster at {address} with the token in {token_path} "
                              f"({first[:200]}); check the address and that scv cluster head runs there")
    thread = threading.Thread(target=ask, name="scv-gcs-probe", daemon=True)
    thread.start()
    thread.join(GCS_SECONDS)
    if thread.is_alive():
        raise ClusterError(f"the Ray cluster at {address} did not answer within {GCS_SECONDS:.0f} s (token file "
                           f"{token_path}); check the address and that scv cluster head runs there")
    if "error" in found:
        raise ClusterError(found["error"])
    return found["client"]


def _float_map(values) -> dict[str, float]:
    return {str(k): float(v) for k, v in dict(values).items()}


class GcsView:
    """The cluster as its GCS sees it: nodes, their labels, slots and running tasks."""

    def __init__(self, address: str, token_path: Path):
        require_ray()
        client_environment(token_path)
        import_ray()
        self.address = address
        self.host, self.port = parse_address(address)
        self.token_path = token_path
        self._client = _gcs_client(self.host, self.port, token_path)

    def nodes(self) -> list[NodeInfo]:
        try:
            infos = self._client.get_all_node_info(timeout=10)
            usage = self._client.get_all_resource_usage(timeout=10)
        except Exception as exc:
            raise ClusterError(f"the Ray cluster at {self.address} stopped answering ({exc}); try again") from None
        available = {b.node_id.hex(): _float_map(b.resources_available) for b in usage.resource_usage_data.batch}
        found = []
        for node_id, info in infos.items():
            if info.state != 0:        # GcsNodeInfo.ALIVE
                continue
            key = node_id.hex()
            total = _float_map(info.resources_total)
            free = available.get(key, total)
            labels = dict(info.labels)
            slots = {name[len(AGENT_RESOURCE):]: int(value) for name, value in total.items()
                     if name.startswith(AGENT_RESOURCE)}
            running = {agent: max(0, int(round(slots[agent] - free.get(AGENT_RESOURCE + agent, 0.0))))
                       for agent in slots}
            found.append(NodeInfo(id=key, host=labels.get("scv_host") or info.node_manager_hostname,
                                  ip=info.node_manager_address, head=HEAD_RESOURCE in total,
                                  version=labels.get("scv_version"), role=labels.get("scv_role"), slots=slots,
                                  running=running, labels=labels))
        found.sort(key=lambda n: (not n.head, n.host, n.id))
        return found

    def head(self) -> NodeInfo | None:
        return next((node for node in self.nodes() if node.head), None)


def connect_driver(address: str, token_path: Path) -> None:
    """`ray.init` on an existing cluster, checked first (see the module docstring)."""
    view = GcsView(address, token_path)
    import ray
    try:
        ray.init(address=f"{view.host}:{view.port}", namespace=NAMESPACE, log_to_driver=False,
                 logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"could not connect to the Ray cluster at {address} with the token in {token_path} "
                           f"({str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}); a batch driver "
                           "runs on a node of the cluster: the head, or a machine that ran scv cluster join") from None
