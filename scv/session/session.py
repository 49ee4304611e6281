"""A session: one workspace, one provider, one conversation, and one ToolRunner whose calls run
one at a time through the process's Supervisor (which must exist before any thread starts).

Clients start turns with `run_turn`. The session can also start a turn on its own: anything
holding the session (a background job finishing) calls `queue_turn(prompt, origin)`;
the client runs queued turns when it is idle, and their events carry `origin`. `held()`
keeps a one-shot client (`scv exec`) open while work that will queue a turn is outstanding.

The session owns its collaborators and hands them to its tools when it builds the registry:
its delegated agents and their conversations, and its background jobs (`Services`). Closing it
cancels the jobs and ends the conversations, live workers included.
"""

import enum
import itertools
import select
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Protocol

import msgspec

from scv.config.load import Config, scv_home
from scv.core import events as ev
from scv.core.cancellation import Bell, Cancellation
from scv.core.events import EventSink
from scv.core.limits import Budget, Limits, smaller
from scv.core.risk import Risk
from scv.core.states import Moves
from scv.providers.base import HistoryItem, ModelReply, Provider
from scv.session.calls import ToolRunner
from scv.session.prompt import system_prompt
from scv.session.turn_loop import Phase, ReplyCheck, TurnOutcome, run_turn
from scv.supervision.supervisor import Supervisor
from scv.telemetry.spans import NO_SPAN, Span
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry
from scv.tools.services import open_services

if TYPE_CHECKING:
    from scv.agents.session import AgentSession
    from scv.mcp.servers import McpServers

_approval_ids = itertools.count(1)


class Asker(Protocol):
    """Puts an approval request to the client; True to approve. Must return (deny) once
    `cancel` is set, never leave the turn waiting."""

    def __call__(self, request_id: str, tool: str, risk: Risk, summary: str, cancel: Cancellation) -> bool: ...


def deny_all(request_id: str, tool: str, risk: Risk, summary: str, cancel: Cancellation) -> bool:
    return False


class SessionState(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"       # no turn starts again; jobs cancelled, conversations ended


SESSION_MOVES = Moves({SessionState.OPEN: {SessionState.CLOSED}, SessionState.CLOSED: set()})


class QueuedTurn(msgspec.Struct, frozen=True):
    prompt: str
    origin: dict[str, Any]
    build: Callable[[], tuple[str, dict[str, Any]] | None] | None = None


class Session:
    def __init__(self, supervisor: Supervisor, ctx: ToolContext, provider: Provider, *, emit: EventSink,
                 asker: Asker = deny_all, auto_approve: bool = False, base_prompt: str | None = None,
                 agents: "AgentSession | None" = None, output_instruction: str | None = None,
                 trace: Span = NO_SPAN, mcp: "McpServers | None" = None, limits: Limits | None = None):
        if ctx.budget is None:
            # The run's limits: the config's, lowered by the command's (--max-*) or a parent's.
            from scv.config.load import prices_of, run_limits
            ctx = msgspec.structs.replace(ctx, budget=Budget(smaller(run_limits(ctx.config), limits),
                                                             prices_of(ctx.config)))
        self.ctx = ctx
        self.budget: Budget = ctx.budget
        self.trace = trace          # the run's span (scv/telemetry/): each turn is a child of it
        self.provider = provider
        self.emit = emit
        self.asker = asker
        self.auto_approve = auto_approve
        self.history: list[HistoryItem] = []
        self.phase = Phase.IDLE
        self.cancel_reason = "cancelled"    # set by the client before it cancels: "timeout", "interrupted", ...
        self._turn_ids = itertools.count(1)
        self._queue: deque[QueuedTurn] = deque()
        self._lock = threading.Lock()
        self.on_queued: Callable[[], None] | None = None
        self.state = SessionState.OPEN
        self._work_bell = Bell()   # rung when a turn is queued or a job settles
        services = open_services(ctx.config, scv_home(), auto_approve=auto_approve, queue_report=self.queue_report,
                                 agents=agents, on_settle=self._work_bell.ring)
        self.agents, self.jobs = services.agents, services.jobs
        if self.jobs is not None:
            self.budget.watch(self._stop_jobs_at_limit)
        self.services = services
        self.mcp = services.mcp = mcp
        self._mcp_generation: int | None = None
        if mcp is not None:
            try:
                mcp.start()         # every server's tool list before the first model request
            except BaseException:
                self.close()
                raise
        self.registry = build_registry(ctx, services)
        # The session's approvals go through `ask`; the runner's own approver is never consulted.
        self.runner = ToolRunner(supervisor, self.registry, ctx, approver=lambda *_: False, jobs=self.jobs)
        self._offer_mcp()
        specs = list(self.registry)
        self.system_prompt = system_prompt(base_prompt or ctx.config.agent.system_prompt, specs, ctx)
        if output_instruction:      # scv exec --output-schema: the final answer's contract comes last
            self.system_prompt += "\n\n" + output_instruction
        self._tool_schemas = self._schemas(specs)
        self.hosted_tools = _hosted_tools(ctx, provider)

    @property
    def config(self) -> Config:
        return self.ctx.config

    def _schemas(self, specs) -> tuple[dict[str, Any], ...]:
        return tuple({"name": d["name"], "description": d["description"], "schema": d["schema"]}
                     for d in (spec.describe(self.ctx) for spec in specs))

    @property
    def tool_schemas(self) -> tuple[dict[str, Any], ...]:
        """The tools offered to the next model request: the MCP servers' as they are now (a
        changed list, a server left out after crashing twice) take effect here."""
        if self._offer_mcp():
            self._tool_schemas = self._schemas(list(self.registry))
        return self._tool_schemas

    def _offer_mcp(self) -> bool:
        """Registers the MCP servers' tools as they are now; True when they changed."""
        if self.mcp is None:
            return False
        generation, offered = self.mcp.offer()
        if generation == self._mcp_generation:
            return False
        from scv.tools.registry import mcp_class
        self._mcp_generation = generation
        family = mcp_class()
        self.registry.set_mcp([family(self.services, tool) for tool in offered])
        return True

    def new_turn_id(self) -> str:
        return f"turn-{next(self._turn_ids)}"

    def run_turn(self, prompt: str, *, cancel: Cancellation, origin: dict[str, Any] | None = None,
                 turn_id: str | None = None, check: ReplyCheck | None = None,
                 parent: Span | None = None) -> TurnOutcome:
        return run_turn(self, prompt, cancel=cancel, origin=origin, turn_id=turn_id, check=check, parent=parent)

    def _stop_jobs_at_limit(self) -> None:
        """A limit reached stops the run's spending: its background jobs too (docs/limits.md)."""
        hit = self.budget.hit()
        if hit is not None and self.jobs is not None:
            self.jobs.stop_at_limit(hit.wire())

    # --- approvals ---------------------------------------------------------------------------

    def ask(self, turn_id: str, tool: str, risk: Risk, summary: str, cancel: Cancellation) -> bool:
        """The client's answer for a call the policy asks about."""
        if self.auto_approve:
            return True
        request_id = f"approval-{next(_approval_ids)}"
        ev.emit(self.emit, ev.ApprovalRequested(turn_id=turn_id, id=request_id, tool=tool, risk=risk.value,
                                                summary=summary, workspace=str(self.ctx.workspace)))
        approved = False
        # The wait ends when the turn is cancelled or when the run's budget is spent meanwhile (a
        # background job's spend): either answers the request cancelled.
        waiting = Cancellation()
        cancel.link(waiting)
        self.budget.watch(waiting.cancel)
        try:
            # An asker may raise RefusedError: its sentence ("no terminal to ask") reaches the model.
            approved = not waiting.cancelled and bool(self.asker(request_id, tool, risk, summary, waiting))
        finally:
            cancel.unlink(waiting)
            self.budget.unwatch(waiting.cancel)
            limited = waiting.cancelled and not cancel.cancelled
            if waiting.cancelled:
                approved = False    # a turn cancelled (or out of budget) while waiting denies the request
            waiting.close()
            ev.emit(self.emit, ev.ApprovalResolved(turn_id=turn_id, id=request_id, approved=approved,
                                                   reason="limit" if limited else msgspec.UNSET))
        return approved

    # --- the final reply ---------------------------------------------------------------------

    def finish_reply(self, reply: ModelReply) -> str:
        if reply.annotations and self.hosted_tools:
            from scv.web.sources import append_sources
            return append_sources(reply.text, reply.annotations)
        return reply.text

    # --- turns the session starts on its own -------------------------------------------------

    def queue_turn(self, prompt: str, origin: dict[str, Any]) -> None:
        with self._lock:
            self._queue.append(QueuedTurn(prompt, origin))
        self._work_bell.ring()
        if self.on_queued is not None:
            self.on_queued()

    def queue_report(self, build: Callable[[], tuple[str, dict[str, Any]] | None]) -> None:
        """Queues a turn whose prompt and origin are built when it starts (None: nothing left to
        say), so results that arrive while it waits join it (background job reports)."""
        with self._lock:
            self._queue.append(QueuedTurn("", {}, build))
        self._work_bell.ring()
        if self.on_queued is not None:
            self.on_queued()

    def next_queued(self) -> QueuedTurn | None:
        while True:
            with self._lock:
                if not self._queue:
                    return None
                queued = self._queue.popleft()
            if queued.build is None:
                return queued
            built = queued.build()
            if built is not None:
                return QueuedTurn(*built)

    def wait_for_work(self, cancel: Cancellation) -> None:
        """Blocks until a turn is queued, a job settles, or `cancel` fires (a one-shot client's wait)."""
        select.select([self._work_bell.fileno(), cancel.fileno()], [], [])
        self._work_bell.drain()

    def requeue(self, queued: QueuedTurn) -> None:
        """Puts a turn taken with `next_queued` back at the front (a client turn got in first)."""
        with self._lock:
            self._queue.appendleft(queued)

    def held(self) -> bool:
        """Work that will still queue a turn: a queued turn, or background jobs outstanding."""
        with self._lock:
            if self._queue:
                return True
        return self.jobs is not None and self.jobs.outstanding()

    @property
    def closed(self) -> bool:
        return self.state is SessionState.CLOSED

    def close(self) -> None:
        if self.state is SessionState.CLOSED:
            return
        self.state = SESSION_MOVES.check("a session", self.state, SessionState.CLOSED)     # its jobs and conversations end now
        if self.jobs is not None:
            self.budget.unwatch(self._stop_jobs_at_limit)
            self.jobs.close()
        self.agents.close()
        if self.mcp is not None:
            self.mcp.close()
        self._work_bell.close()


def _hosted_tools(ctx: ToolContext, provider: Provider) -> tuple[dict[str, Any], ...]:
    """The endpoint's own tools: hosted web search when `[web] search = "provider"` and the
    provider speaks the Responses API (Chat Completions has no hosted tools)."""
    web = getattr(ctx.config, "web", None)
    search = getattr(web, "search", None)
    if not search or provider.wire_api != "responses":
        return ()
    from scv.web.sources import hosted_tools
    return tuple(msgspec.to_builtins(tool) for tool in hosted_tools(search))
