"""`scv server --stdio`: one client on stdin/stdout, newline-delimited JSON-RPC 2.0.

The main thread reads requests; a turn runs in its own thread, one at a time, so `turn.cancel`
and `approval.resolve` are read while it runs. Turns the session starts on its own (queued
with `Session.queue_turn`) run when no turn is running. When the client goes away (EOF, a
broken stdout) or the process gets SIGINT/SIGTERM, the running turn is cancelled, its tool
call's processes are stopped, and `serve` returns. Every wait is on descriptors: the read loop
waits on stdin and the server's stop pipe together, an approval on its answer, the turn's
cancellation and the stop pipe.

```
connection: CONNECTED ──EOF, broken stdout, SIGINT/SIGTERM──▶ GONE
turn slot:  IDLE ──turn.start, or a turn the session queued──▶ BUSY ──its last event──▶ IDLE
```
"""

import os
import collections
import enum
import queue
import select
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from scv import __version__
from scv.chat.channel import open_channel
from scv.config.load import load_config
from scv.core import events as ev
from scv.core.cancellation import Cancellation
from scv.core.errors import ScvError
from scv.core import jsonrpc
from scv.core.lines import READ_BYTES
from scv.core.lineage import inherited_depth
from scv.core.risk import Risk
from scv.core.signals import on_stop_signals
from scv.core.stopping import SETTLE_SECONDS
from scv.core.traceparent import from_meta
from scv.protocol.messages import (MAX_MESSAGE_BYTES, PROTOCOL_VERSION, SERVER_ERROR, ApprovalResolveParams,
                                   BadMessage, InitializeParams, NoParams, SessionStartParams, TurnStartParams,
                                   decode_params)
from scv.providers.factory import build_provider
from scv.session.context import resolve_workspace
from scv.session.session import Session
from scv.session.turn_loop import Phase
from scv.skills.index import session_skills
from scv.supervision.supervisor import Supervisor
from scv.telemetry.spans import NO_SPAN, Span
from scv.tools.base import ToolContext

OTHER_STOP_WAIT = 1.0


class Connection(enum.Enum):
    CONNECTED = "connected"
    GONE = "gone"       # EOF, a broken stdout, or a signal: nobody reads any more


class TurnSlot(enum.Enum):
    IDLE = "idle"
    BUSY = "busy"       # a turn is accepted or running


class _Approval:
    def __init__(self):
        self.answered = Cancellation()      # readable once the client answered
        self.approved = False


class StdioServer:
    def __init__(self, supervisor: Supervisor, stdin: BinaryIO, stdout: BinaryIO, *, script: Path | None = None,
                 trace: Span = NO_SPAN):
        self.supervisor = supervisor
        self.trace = trace          # the server's run span: its sessions' turns are under it
        self.stdin = stdin
        self.stdout = stdout
        self.script = script
        self.initialized = False
        self.session: Session | None = None
        self.connection = Connection.CONNECTED
        self.wire = jsonrpc.Connection(limit=MAX_MESSAGE_BYTES, peer="the client", strict=True)
        self._write_lock = threading.Lock()
        self._state = threading.Lock()
        self._approvals: dict[str, _Approval] = {}
        self._slot = TurnSlot.IDLE
        self._work: "queue.Queue[tuple | None]" = queue.Queue()     # the open session's client turns
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._cancel: Cancellation | None = None
        # Readable once the server stops (the client is gone, or a signal): ends every wait.
        self._stopping = Cancellation()

    @property
    def client_gone(self) -> bool:
        return self.connection is Connection.GONE

    def _move(self, to: TurnSlot) -> None:
        """The turn slot's one transition, under `_state`: IDLE <-> BUSY, never twice the same."""
        if self._slot is to:
            raise RuntimeError(f"the turn slot is already {to.value}")
        self._slot = to

    # --- output ------------------------------------------------------------------------------

    def _write(self, how: str, *args) -> None:
        """Queues one message on the connection (`how`: respond, respond_error, notify) and writes it."""
        with self._write_lock:
            if self.client_gone:
                return
            getattr(self.wire, how)(*args)
            data, self.wire.out[:] = bytes(self.wire.out), b""
            try:
                self.stdout.write(data)
                self.stdout.flush()
                return
            except (BrokenPipeError, ValueError, OSError):
                self.connection = Connection.GONE   # CONNECTED -> GONE: nobody reads any more, treated like EOF
        # Outside the write lock: the running turn is cancelled and its processes stopped now,
        # not when it next finishes, and a read loop waiting on a stdin still open is woken.
        self._cancel_turn("client_gone")
        self._stopping.cancel()

    def _respond(self, id, result: Any) -> None:
        if id is not msgspec.UNSET:     # a notification gets no response
            self._write("respond", id, result)

    def _error(self, id, code: int, message: str) -> None:
        self._write("respond_error", id, code, message)

    def _refuse(self, bad: BadMessage) -> None:
        """The error response; a notification gets none (JSON-RPC 2.0), so only stderr hears of it."""
        if bad.notification or bad.id is msgspec.UNSET:
            print(f"scv: a notification was not carried out: {bad}", file=sys.stderr, flush=True)
            return
        self._error(bad.id, bad.code, str(bad))

    def notify(self, name: str, params: dict[str, Any]) -> None:
        if name == ev.APPROVAL_REQUESTED:
            # Registered before the client can see the id, so a fast answer finds it.
            with self._state:
                self._approvals[params["id"]] = _Approval()
            params = {k: params[k] for k in ("id", "tool", "risk", "summary", "turn_id", "workspace")}
        elif name == ev.APPROVAL_RESOLVED:
            with self._state:
                self._approvals.pop(params["id"], None)     # a late approval.resolve gets an error
        elif name in (ev.TURN_COMPLETED, ev.TURN_FAILED):
            with self._state:
                self._move(TurnSlot.IDLE)   # BUSY -> IDLE: a client that saw this event may start the next turn
        self._write("notify", name, params)

    # --- approvals ---------------------------------------------------------------------------

    def _ask(self, request_id: str, tool: str, risk: Risk, summary: str, cancel: Cancellation) -> bool:
        with self._state:
            waiter = self._approvals.get(request_id)
        if waiter is None:
            return False
        try:
            select.select([waiter.answered.fileno(), cancel.fileno(), self._stopping.fileno()], [], [])
            if not waiter.answered.cancelled or cancel.cancelled or self.client_gone:
                return False    # a turn cancelled while waiting denies the request
            return waiter.approved
        finally:
            with self._state:
                self._approvals.pop(request_id, None)
            waiter.answered.close()

    # --- the read loop -----------------------------------------------------------------------

    def serve(self) -> int:
        signalled: list[int] = []

        def on_signal(signum: int) -> None:
            signalled.append(signum)
            self._stopping.cancel()     # a byte in a pipe: the read loop's select sees it

        fd, stop = self.stdin.fileno(), self._stopping.fileno()
        arrived: collections.deque = collections.deque()
        # A second signal while the turn stops is recorded, not fatal: the processes get stopped.
        with on_stop_signals(on_signal):
            try:
                while not self.client_gone and not signalled:
                    if not arrived:
                        # The stop is a byte in a pipe: it ends the wait however long stdin stays silent.
                        if stop in select.select([fd, stop], [], [])[0]:
                            break
                        chunk = os.read(fd, READ_BYTES)
                        arrived.extend(self.wire.feed(chunk) if chunk else self.wire.close())
                        if not chunk and not arrived:
                            break
                        continue
                    self._handle(arrived.popleft())
            finally:
                self._shutdown("interrupted" if signalled else "client_gone")
        return 0

    def _handle(self, message: jsonrpc.Incoming | jsonrpc.Unreadable | jsonrpc.Response) -> None:
        if isinstance(message, jsonrpc.Unreadable):
            self._error(message.id, message.code, message.message)
            return
        if isinstance(message, jsonrpc.Response):
            return      # this server sends no requests, so a strict connection passes on no response
        rid = message.id if message.answer else msgspec.UNSET      # UNSET: a notification, never answered
        try:
            params = decode_params(message)
            match params:
                case InitializeParams():
                    if params.protocol_version != PROTOCOL_VERSION:
                        raise BadMessage(jsonrpc.INVALID_PARAMS, f"this server speaks protocol_version "
                                                                 f"{PROTOCOL_VERSION}, not {params.protocol_version}",
                                         rid)
                    self.initialized = True
                    self._respond(rid, {"protocol_version": PROTOCOL_VERSION,
                                        "server": {"name": "scv", "version": __version__}})
                case _ if not self.initialized:
                    raise BadMessage(SERVER_ERROR, "send initialize first", rid)
                case SessionStartParams():
                    self._respond(rid, self._start_session(params, rid))
                case TurnStartParams():
                    # A client's `_meta.traceparent` (a parent SCV's agent call) parents the turn.
                    parent = self.trace.remote(from_meta(params.meta)) if self.trace.recording else None
                    self._start_turn(params.prompt, rid, parent)
                case NoParams() if message.method == "turn.cancel":
                    self._respond(rid, {"cancelled": self._cancel_turn("cancelled")})
                case ApprovalResolveParams():
                    with self._state:
                        waiter = self._approvals.get(params.id)
                    if waiter is None:
                        raise BadMessage(jsonrpc.INVALID_PARAMS, f"no approval request {params.id!r} is waiting", rid)
                    waiter.approved = params.approved
                    waiter.answered.cancel()
                    self._respond(rid, {})
                case NoParams():        # session.close
                    self._close_session()
                    self._respond(rid, {})
        except BadMessage as bad:
            self._refuse(bad)

    # --- sessions and turns ------------------------------------------------------------------

    def _start_session(self, params, id) -> dict[str, Any]:
        if self.session is not None:
            raise BadMessage(SERVER_ERROR, "a session is already open; send session.close first", id)
        try:
            root = resolve_workspace(params.cwd)
            config = load_config(root)
            provider = build_provider(config, script=self.script, model=params.model)
            limits = None
            if params.limits is not None:
                from scv.core.limits import Limits
                limits = Limits(max_turns=params.limits.max_turns, max_tokens=params.limits.max_tokens,
                                max_cost_usd=params.limits.max_cost_usd)
            _check_own_cost(config, provider.model, limits)
            wanted = params.channel
            channel = None if wanted is None else open_channel(wanted.kind, wanted.account, wanted.conversation,
                                                               wanted.log, wanted.keep_days, config)
        except ScvError as err:
            raise BadMessage(SERVER_ERROR, str(err), id) from None
        # A server started inside a delegated agent is as deep as that agent, whatever its client
        # declares, so agent.max_delegation_depth holds down the whole chain.
        depth = max(params.delegation_depth, inherited_depth(dict(os.environ)))
        ctx = ToolContext(workspace=root, config=config, delegation_depth=depth,
                          skills=session_skills(root, config), channel=channel)
        try:
            mcp = None
            if config.mcp_servers:      # the user's [mcp_servers]: every server up before the first turn
                from scv.config.load import user_config_path
                from scv.config.mcp import servers
                from scv.mcp.servers import LiveMcpServers
                mcp = LiveMcpServers(self.supervisor, servers(config.mcp_servers, None, str(user_config_path())),
                                     ctx, self.notify, trace=self.trace)
            session = Session(self.supervisor, ctx, provider, emit=self.notify, asker=self._ask,
                              auto_approve=params.auto_approve, base_prompt=params.system_prompt, trace=self.trace,
                              mcp=mcp, limits=limits)
        except ScvError as err:
            raise BadMessage(SERVER_ERROR, str(err), id) from None
        self.session = session
        self._stop = threading.Event()
        self._work = work = queue.Queue()
        self._worker = threading.Thread(target=self._run_turns, args=(session, work, self._stop), name="scv-turns",
                                        daemon=True)
        self._worker.start()
        session.on_queued = lambda: work.put(None)      # wake the worker
        started = {"session_id": f"session-{uuid.uuid4().hex[:12]}", "workspace": str(root), "provider": provider.name,
                   "model": provider.model, "tools": session.registry.names()}
        if channel is not None:
            started["channel"] = channel.describe()
        return started

    def _start_turn(self, prompt: str, id, parent: Span | None = None) -> None:
        session = self.session
        if session is None:
            raise BadMessage(SERVER_ERROR, "no session is open; send session.start first", id)
        with self._state:
            if self._slot is TurnSlot.BUSY:
                raise BadMessage(SERVER_ERROR, "a turn is already running; wait for turn.completed or send "
                                               "turn.cancel", id)
            # IDLE -> BUSY: the turn exists (and turn.cancel finds it) before the client hears of it.
            self._move(TurnSlot.BUSY)
            cancel = self._cancel = Cancellation()
        turn_id = session.new_turn_id()
        self._respond(id, {"turn_id": turn_id})
        self._work.put((prompt, None, turn_id, cancel, parent))

    def _run_turns(self, session: Session, work: queue.Queue, stop: threading.Event) -> None:
        """The session's one turn thread: client turns in order, and turns the session queued
        on its own whenever no client turn is waiting."""
        while not stop.is_set() and not self.client_gone:
            # Woken by a client turn, a turn the session queued (None), or the end (None, stop set).
            item = work.get()
            if stop.is_set() or self.client_gone:
                return
            if item is None:
                with self._state:
                    if self._slot is TurnSlot.BUSY:
                        continue        # a client turn was accepted; its item is on the way
                # Outside the lock: a queued turn may build its prompt when it starts.
                queued = session.next_queued()
                if queued is None:
                    continue
                with self._state:
                    if self._slot is TurnSlot.BUSY:
                        work.put(None)  # a client turn got in first: try the queued one after it
                        session.requeue(queued)
                        continue
                    self._move(TurnSlot.BUSY)   # IDLE -> BUSY for a turn the server starts on its own
                item = (queued.prompt, queued.origin, None, Cancellation(), None)
            prompt, origin, turn_id, cancel, parent = item
            with self._state:
                self._cancel = cancel   # what turn.cancel cancels from now on
            try:
                session.run_turn(prompt, cancel=cancel, origin=origin, turn_id=turn_id, parent=parent)
            except BaseException:
                with self._state:
                    if self._slot is TurnSlot.BUSY:
                        self._move(TurnSlot.IDLE)   # the turn's last event, which clears it, never came
                raise
            finally:
                with self._state:
                    if self._cancel is cancel:
                        self._cancel = None
                    cancel.close()
            work.put(None)      # a turn the session queued while this one ran is next

    def _cancel_turn(self, reason: str) -> bool:
        with self._state:
            cancel = self._cancel
            if cancel is None or cancel.cancelled:
                return False
            if self.session is not None:
                self.session.cancel_reason = reason
            cancel.cancel()     # RUNNING -> CANCELLING: the tool call stops, the turn ends
            return True

    def _wait_for_turn(self) -> None:
        self._stop.set()
        self._work.put(None)
        thread = self._worker
        if thread is None or not thread.is_alive():
            return
        phase = self.session.phase if self.session else Phase.IDLE
        thread.join(SETTLE_SECONDS if phase is Phase.TOOL else OTHER_STOP_WAIT)

    def _close_session(self) -> None:
        session = self.session
        if session is None:
            return
        self._cancel_turn("session_closed")
        self._wait_for_turn()
        session.close()
        self.session = None

    def _shutdown(self, reason: str) -> None:
        # stdout may still be read after stdin closed: the turn's last events are still written.
        self._cancel_turn(reason)
        self._wait_for_turn()
        if self.session is not None:
            self.session.close()
            self.session = None


def _check_own_cost(config, model: str, limits) -> None:
    """A USD limit (the config's or a parent's) needs the price of the session's own model."""
    from scv.config.load import prices_of, run_limits
    from scv.core.errors import ConfigError
    from scv.core.limits import own_cost_refusal, smaller
    why = own_cost_refusal(smaller(run_limits(config), limits), model, prices_of(config))
    if why is not None:
        raise ConfigError(why)
