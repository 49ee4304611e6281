"""The Ray engine: each submission is a Ray generator task (scv/batch/ray_task.py) that needs one
slot of its agent, `{"scv_agent_<agent>": 1}`; Ray places it on a node that offers one. This
process must already be connected (`ray.init`); the task's lines arrive as they are printed.

A task whose node or worker goes (NodeDiedError, WorkerCrashedError, LocalRayletDiedError,
OwnerDiedError) finishes as `lost`, naming the node; Ray itself retries nothing (max_retries=0):
the runner decides, within --retries."""

import time
from typing import Any, Callable, Iterable

import ray
import ray.exceptions as rx

from scv.batch.engine import CANCELLED, LOST, Event, Finished, Node, Note, Progress, Started, Submission
from scv.batch.run_one import encode_task
from scv.cluster.settings import AGENT_RESOURCE, slots_resource
from scv.core.traceparent import TraceContext

# The driver waits this long for cancelled tasks (each runner's teardown), then force-cancels.
CANCEL_WAIT_SECONDS = 12.0
PULL_SECONDS = 0.5
LOST_ERRORS = (rx.NodeDiedError, rx.WorkerCrashedError, rx.LocalRayletDiedError, rx.OwnerDiedError)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "ray::")) and "\x1b" not in line:
            return line[:300]
    return type(exc).__name__


class RayEngine:
    cancel_wait = CANCEL_WAIT_SECONDS

    def __init__(self, tick: Callable[[], None] | None = None, tick_seconds: float = 2.0,
                 trace: TraceContext | None = None, telemetry: dict[str, str] | None = None):
        """`trace`: the batch's span, each task's parent; `telemetry`: the OTEL_* variables that
        make a node's runner export where this driver does (both None when it does not trace)."""
        from scv.batch.ray_task import run_task
        self._run_task = run_task
        self._trace, self._telemetry = trace, telemetry or None
        self._tick, self._tick_seconds, self._ticked = tick, tick_seconds, 0.0
        self._gens: dict[tuple[str, int], Any] = {}
        self._unread: dict[tuple[str, int], Any] = {}     # an item's ref whose get timed out, read next time
        self._ending: dict[tuple[str, int], Any] = {}     # a task's end, once its stream ended before it
        self._nodes: dict[tuple[str, int], Node] = {}
        self._names: dict[str, Node] = {}

    # --- what the cluster offers ---------------------------------------------------------------

    def capacity(self) -> dict[str, int]:
        return {name[len(AGENT_RESOURCE):]: int(value) for name, value in ray.cluster_resources().items()
                if name.startswith(AGENT_RESOURCE) and value >= 1}

    def _alive_nodes(self) -> list[dict[str, Any]]:
        return [n for n in ray.nodes() if n.get("Alive")]

    def offers(self) -> str:
        parts = []
        for info in self._alive_nodes():
            node = self._node(info["NodeID"], info.get("NodeManagerHostname") or "?")
            agents = [f"{name[len(AGENT_RESOURCE):]} {int(v)}" for name, v in sorted(info["Resources"].items())
                      if name.startswith(AGENT_RESOURCE)]
            if agents:
                parts.append(f"{node.label()} offers {', '.join(agents)}")
        return "; ".join(parts) if parts else "no node offers any agent (scv cluster join adds one)"

    def _node(self, node_id: str, host: str) -> Node:
        if node_id not in self._names:
            infos = self._alive_nodes()
            hosts = [(n.get("Labels") or {}).get("scv_host") or n.get("NodeManagerHostname") for n in infos]
            for info, name in zip(infos, hosts):
                shared = hosts.count(name) > 1
                self._names[info["NodeID"]] = Node(host=name or "?", id=info["NodeID"],
                                                   name=f"{name}/{info['NodeID'][:6]}" if shared else (name or "?"))
            self._names.setdefault(node_id, Node(host=host, id=node_id, name=f"{host}/{node_id[:6]}"))
        return self._names[node_id]

    # --- tasks ---------------------------------------------------------------------------------

    def submit(self, submission: Submission) -> None:
        task = submission.task
        payload = encode_task(task.spec, task.line, submission.attempt, task.batch, self._trace)
        self._gens[submission.key] = self._run_task.options(
            resources={slots_resource(task.agent): 1}, name=f"scv {task.id} #{submission.attempt}").remote(
                payload, self._telemetry)

    def wake(self) -> None:
        """Nothing to do: ray.wait returns within the runner's poll, the shortest the display allows."""

    def cancel(self, key: tuple[str, int], force: bool = False) -> None:
        gen = self._gens.get(key)
        if gen is not None:
            try:
                ray.cancel(gen, force=force)
            except Exception:       # already finished, or its worker already gone: its end is on its way
                pass

    def close(self) -> None:
        self._gens.clear()
        self._unread.clear()
        self._ending.clear()

    def _forget(self, key: tuple[str, int]) -> None:
        del self._gens[key]
        self._unread.pop(key, None)
        self._ending.pop(key, None)

    def events(self, timeout: float) -> Iterable[Event]:
        if self._tick is not None and time.monotonic() - self._ticked >= self._tick_seconds:
            self._ticked = time.monotonic()
            self._tick()
        if not self._gens:
            return []
        keys = list(self._gens)
        ready, _ = ray.wait([self._waitable(k) for k in keys], num_returns=1, timeout=timeout, fetch_local=True)
        found: list[Event] = []
        while ready:
            ready_ids = {id(w) for w in ready}
            waiting = False
            for key in keys:
                if key in self._gens and id(self._waitable(key)) in ready_ids:
                    pulled = self._pull(key)
                    waiting = waiting or pulled is None
                    found.extend(pulled or [])
            live = [self._waitable(k) for k in keys if k in self._gens]
            if not live or waiting:     # back to the runner: a stop request is acted on between pulls
                break
            ready, _ = ray.wait(live, num_returns=len(live), timeout=0, fetch_local=True)
            if len(found) > 1000:
                break
        return found

    def _waitable(self, key: tuple[str, int]):
        """What ray.wait watches for one task: the item whose get timed out, else the task's end
        once its stream has ended without it (see _pull), else its generator."""
        for kept in (self._unread, self._ending):
            if key in kept:
                return kept[key]
        return self._gens[key]

    def _pull(self, key: tuple[str, int]) -> list[Event] | None:
        """The next item of one ready task, or None when it is not there yet after all."""
        task_id, attempt = key
        gen, node = self._gens[key], self._nodes.get(key)
        try:
            ref = self._unread.pop(key, None)
            if ref is None:
                # Not next(gen): a cancelled task's stream ends at once (ray.wait calls it ready),
                # and next() then waits, with no timeout, for the task to finish its teardown,
                # keeping this thread (and the stop steps that force-cancel) from running.
                ref = gen._next_sync(timeout_s=0)
                if ref.is_nil():
                    self._ending[key] = gen.completed()
                    return None
            # Bounded: an item ray.wait called ready can still take a while to get.
            message = ray.get(ref, timeout=PULL_SECONDS)
        except rx.GetTimeoutError:
            self._unread[key] = ref
            return None
        except StopIteration:
            self._forget(key)
            return [Finished(task_id, attempt, node, {"status": "failed",
                                                      "error": "the task ended without a result"})]
        except rx.TaskCancelledError:
            self._forget(key)
            return [Finished(task_id, attempt, node, {"status": CANCELLED})]
        except LOST_ERRORS as exc:
            self._forget(key)
            where = f"node {node.label()} (Ray node id {node.id})" if node is not None else "its node"
            return [Finished(task_id, attempt, node, {"status": LOST,
                                                      "error": f"{where} went away: {type(exc).__name__}"})]
        except rx.RayError as exc:
            self._forget(key)
            return [Finished(task_id, attempt, node, {"status": "failed", "error": _first_line(exc)})]
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "started":
            node = self._node(str(message.get("node_id")), str(message.get("host")))
            self._nodes[key] = node
            return [Started(task_id, attempt, node)]
        if kind == "progress":
            return [Progress(task_id, attempt, node, str(message.get("text", "")))]
        if kind == "result":
            self._forget(key)
            value = message.get("result") if isinstance(message.get("result"), dict) else {}
            value.setdefault("status", "failed")
            finished = Finished(task_id, attempt, node, value)
            note = message.get("note")
            return [Note(node, note), finished] if isinstance(note, str) else [finished]
        return []
