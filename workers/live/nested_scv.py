"""The nested SCV backend of the `agent` tool: one `scv server --stdio` per conversation, in the
private home `$SCV_HOME/agents/scv` (its own HOME, SCV_HOME and config), spoken to in SCV's own
client protocol (docs/protocol.md):

    initialize {protocol_version: 3} -> session.start {cwd, delegation_depth: parent + 1, model}
    -> turn.start per call

Its events become progress (completed lines of its assistant text, `<tool> <what>` and
`<tool> done|failed` as its tools start and end, its tools' own progress lines; never tool
output). Its approval requests go through the caller's gate, prefixed `[scv-1 depth N]`, and the
answer goes back as `approval.resolve`. Between calls its events are still read: the approval
requests of turns it starts itself are denied (no call is there to carry them to a person), and
its background jobs are counted until its model has seen their results.
"""

import re
import time
from typing import Any

import msgspec
from msgspec import UNSET

from scv.core import traceparent
from scv.core.events import (ApprovalRequested, AssistantDelta, AssistantText, EventError, SessionEvent, ToolCompleted,
                             ToolProgress, ToolStarted, TurnCompleted, TurnFailed, TurnStarted, read_event)
from scv.core.jsonrpc import Connection, Response, WireError, decode_as
from scv.core.limits import LimitHit, Limits, Meter
from scv.core.messages import AgentPrivate, AgentResult
from scv.core.usage import MIXED, PRICES, REPORTED, Usage, as_cost, as_count
from workers.agents import verdict
from workers.agents.capture import bound
from workers.agents.outcome import hint_for
from workers.agents.redact import redact_message
from workers.agents.report import AVAILABILITY, take_tokens
from workers.live.acp_turn import TurnState
from workers.live.conversation import SETTLE_SECONDS, Ended, LiveConversation, opened
from workers.live.nested_jobs import JobLedger
from workers.runtime import ToolFailure, WorkerContext

PROTOCOL_VERSION = 3
MAX_LINE_BYTES = 16 * 1024 * 1024       # the protocol's own limit
BUSY = "a turn is already running"
BUSY_RETRY_SECONDS = 0.05
# The nested SCV's words for a private home without a usable provider (what `scv agents import scv` fixes).
NO_PROVIDER = re.compile(r"no model provider is configured|there is no \[providers\.|providers\.\S+ names no model")


class Message(msgspec.Struct, gc=False):
    """An answer to one of this client's requests: its `result`, or its `error` (`message` and `code`)."""
    id: int | str | None = None
    result: Any = None
    error: dict[str, Any] | None = None


class NestedScv(LiveConversation):
    def __init__(self, args: dict[str, Any], ctx: WorkerContext):
        super().__init__(args, ctx)
        self.wire = Connection(first_id=1, limit=MAX_LINE_BYTES, peer="the nested scv")
        self.out = self.wire.out
        self._answers: dict[int, Message] = {}
        self.session: str | None = None
        self.jobs = JobLedger()
        self._turn_id: str | None = None        # the turn this call started
        self._done: TurnCompleted | TurnFailed | None = None     # how it ended
        self._meter = Meter(Limits())           # this call's allowance (docs/limits.md)
        self._state: TurnState | None = None
        self._ctx: WorkerContext | None = None
        self._own_turn: str | None = None        # a turn the nested SCV started itself, while it runs
        self._starting: int | None = None        # the id of our turn.start, until it is answered

    # --- the wire ------------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any]) -> int:
        request_id = self.wire.request(method, params)
        self.proc.flush(self.out)
        return request_id

    def _read(self, chunks: list[bytes], closing: bool) -> None:
        arrived = []
        for chunk in chunks:
            arrived += self.wire.feed(chunk)
        if closing:
            arrived += self.wire.close()
        for message in arrived:
            if isinstance(message, Response):
                answer = self._answer(message)
                self._answers[message.id] = answer
                if message.id == self._starting and isinstance(answer.result, dict):
                    # Our turn exists from here on: its notifications follow in this same read.
                    self._turn_id = str(answer.result.get("turn_id"))
                continue
            try:
                event = read_event(message.method, message.params)
            except EventError:
                event = None        # unreadable (scv/core/events.py): ignored and counted, as any unknown line
            if event is None:
                self.wire.ignored += 1
                continue
            self._event(event)
        self.proc.flush(self.out)

    @staticmethod
    def _answer(response: Response) -> Message:
        if response.error is not None:
            return Message(id=response.id, error={"code": response.error.code, "message": response.error.text()})
        try:
            result = decode_as(response.result, Any)
        except WireError:
            result = None
        return Message(id=response.id, result=result)

    # --- the conversation's start --------------------------------------------------------------

    def open(self, args: dict[str, Any], ctx: WorkerContext) -> None:
        deadline = self._first_deadline or time.monotonic() + ctx.call.timeout_seconds
        init = self._call("initialize", {"protocol_version": PROTOCOL_VERSION}, ctx, deadline)
        version = init.get("protocol_version") if isinstance(init, dict) else None
        if version != PROTOCOL_VERSION:
            raise Ended("failed", f"the nested scv speaks protocol version {version}, not {PROTOCOL_VERSION}; install "
                                  "the same SCV release as this one", keep=False, available=False)
        params = {"cwd": self.cwd, "delegation_depth": self.depth}
        if args.get("model"):
            params["model"] = args["model"]
        given = Meter.of(args).limits
        if given.any():
            # What is left of the caller's budget: the nested SCV enforces it on its own session.
            params["limits"] = given.wire()
        started = self._call("session.start", params, ctx, deadline)
        self.session = started.get("session_id") if isinstance(started, dict) else None

    def _call(self, method: str, params: dict[str, Any], ctx: WorkerContext, deadline: float) -> Any:
        """A request outside a turn: its result, or Ended with the server's sentence."""
        request_id = self._send(method, params)
        while request_id not in self._answers:
            if ctx.token.cancelled or time.monotonic() >= deadline:
                reason = "cancelled" if ctx.token.cancelled else "timeout"
                what = "was cancelled" if reason == "cancelled" else "ran past the timeout"
                raise Ended(reason, f"{self.name} {what} before its turn started", keep=self.session is not None)
            self._pump(ctx, deadline)
        answer = self._answers.pop(request_id)
        if answer.error is not None:
            text = redact_message(str(answer.error.get("message") or answer.error))
            signin = bool(NO_PROVIDER.search(text))
            kind = verdict.classify(text)
            raise Ended("failed", f"the nested scv refused {method}: {text}", keep=self.session is not None,
                        available=kind not in AVAILABILITY and not signin,
                        hint=hint_for(self.name) if signin or kind == "signin" else None)
        return answer.result

    def _pump(self, ctx: WorkerContext | None, until: float, throttle=None) -> None:
        pumped = self.proc.pump(self.wait_seconds(until), ctx.token.fds() if ctx else (), self.out)
        if pumped.ready and ctx is not None:
            ctx.token.check()
        self._read(pumped.stdout, pumped.exited)
        if throttle is not None:
            self.woke()
        if pumped.exited:
            self.proc.forget()
            raise Ended("failed", f"the nested scv {self.proc.exit_text()}{self._stderr_note()}", keep=False,
                        available=False)

    def _stderr_note(self) -> str:
        tail = self.proc.stderr.text().strip()
        return f"; its stderr ends: {redact_message(tail[-300:], 300)}" if tail else ""

    # --- one call ------------------------------------------------------------------------------

    def turn(self, args: dict[str, Any], ctx: WorkerContext) -> AgentResult:
        if args.get("effort"):
            raise ToolFailure.of("scv does not take effort; omit it", self.blank())
        if args.get("model") and self.turns > 0:
            raise ToolFailure.of("scv takes model only when its conversation starts; omit model to continue this "
                                 "one, or omit session to start a new conversation with that model", self.blank())
        self.begin_turn(args)
        deadline = self.deadline(ctx)
        throttle = self.throttle(ctx)
        self._state = TurnState(self.limit_bytes, throttle.offer)
        self._ctx, self._done = ctx, None
        self._meter = Meter.of(args)
        try:
            self._start_turn(args["prompt"], ctx, deadline, throttle)
            self._follow(ctx, deadline, throttle)
            return self._outcome(self._done)
        except Ended as ended:
            self._state.finish()
            reply, cut = bound(self._state.reply(), self.limit_bytes)
            result = self._result(ended.status, reply, None, cut)
            if ended.status == "limit" and self._meter.hit is not None:
                result.reply, result.limit = "", self._meter.hit.wire()
                if self._done is not None:
                    result.usage = self._usage(self._done.usage) or None
            raise self.failure(ended, result) from None
        finally:
            self._state.finish()
            throttle.finish()
            self._turn_id, self._starting, self._state, self._ctx = None, None, None, None
            self.end_turn()
            self._record_jobs()

    def _start_turn(self, prompt: str, ctx: WorkerContext, deadline: float, throttle) -> str:
        """turn.start; while a turn the nested SCV started itself runs, wait for it to end first."""
        while True:
            # The call's span, so the nested turn joins this trace under its own agent call.
            meta = traceparent.to_meta(traceparent.from_options(ctx.options))
            params = {"prompt": prompt, "_meta": meta} if meta else {"prompt": prompt}
            request_id = self._starting = self._send("turn.start", params)
            self._await_start(request_id, ctx, deadline, throttle)
            answer = self._answers.pop(request_id)
            self._starting = None
            if answer.error is None and isinstance(answer.result, dict):
                return str(answer.result.get("turn_id"))        # a cancel meanwhile: _follow sends turn.cancel
            message = str((answer.error or {}).get("message", answer.result))
            if ctx.token.cancelled or time.monotonic() >= deadline:
                raise Ended("cancelled" if ctx.token.cancelled else "timeout",
                            f"{self.name} stopped before its turn started", keep=True)
            if BUSY not in message:
                raise Ended("failed", f"the nested scv refused turn.start: {redact_message(message)}", keep=True)
            # Its own report turn runs: once it ends, ours starts (a turn that has not announced
            # itself yet gets a moment to).
            waited = time.monotonic() + BUSY_RETRY_SECONDS
            while self._own_turn is not None or time.monotonic() < waited:
                if ctx.token.cancelled or time.monotonic() >= deadline:
                    raise Ended("cancelled" if ctx.token.cancelled else "timeout",
                                f"{self.name} stopped before its turn started", keep=True)
                self._pump(ctx, deadline if self._own_turn is not None else min(deadline, waited), throttle)

    def _await_start(self, request_id: int, ctx: WorkerContext, deadline: float, throttle) -> None:
        """The answer to our turn.start. Once it is sent the turn may exist, so a cancel (or the
        deadline) waits up to the settle time for that answer rather than leave a turn running
        that nobody cancels and whose events nobody follows."""
        settle_by = None
        while request_id not in self._answers:
            now = time.monotonic()
            if settle_by is None and (ctx.token.cancelled or now >= deadline):
                # STARTING -> STOPPING: the answer decides whether there is a turn to cancel.
                settle_by = now + SETTLE_SECONDS
            elif settle_by is not None and now >= settle_by:
                # STOPPING -> SHUT DOWN: no answer; the conversation ends.
                self.proc.shutdown()
                what = "was cancelled" if ctx.token.cancelled else "ran past the timeout"
                raise Ended("cancelled" if ctx.token.cancelled else "timeout",
                            f"{self.name} {what} and did not answer turn.start within {SETTLE_SECONDS:g} s, so it "
                            "was stopped; start a new conversation (omit session)", keep=False)
            self._pump(ctx, settle_by if settle_by is not None else deadline, throttle)

    def _follow(self, ctx: WorkerContext, deadline: float, throttle) -> None:
        stopping, settle_by = None, 0.0
        while self._done is None:
            now = time.monotonic()
            if stopping is None and (ctx.token.cancelled or now >= deadline or self._over_limit()):
                # RUNNING -> STOPPING
                stopping = "cancelled" if ctx.token.cancelled else "timeout" if now >= deadline else "limit"
                settle_by = now + SETTLE_SECONDS
                self._send("turn.cancel", {})
            elif stopping is not None and now >= settle_by:
                # STOPPING -> SHUT DOWN: the nested SCV did not settle; the conversation ends.
                self.proc.shutdown()
                what = "ran past the timeout" if stopping == "timeout" else "was cancelled"
                raise Ended(stopping, f"{self.name} {what} and its turn did not end within {SETTLE_SECONDS:g} s of "
                                      "turn.cancel, so it was stopped; start a new conversation (omit session)",
                            keep=False)
            self._pump(ctx, settle_by if stopping else deadline, throttle)
        if stopping == "limit" and isinstance(self._done, TurnCompleted) and self._done.limit is UNSET:
            return          # it finished its reply before the cancel arrived: the reply stands
        if stopping is not None:
            what = {"timeout": "ran past the timeout and its turn was cancelled",
                    "limit": f"was stopped: {self._meter.hit.sentence() if self._meter.hit else 'a limit'}"}.get(
                stopping, "was cancelled")
            raise Ended(stopping, f"{self.name} {what}; the conversation can continue", keep=True)

    def _over_limit(self) -> bool:
        """The caller's side of the allowance: the rounds of tool calls seen so far (the nested SCV
        checks its own budget too; whichever sees the limit first stops)."""
        return self._meter.on and self._meter.check(Usage(turns=self._state.rounds)) is not None

    def _outcome(self, done: TurnCompleted | TurnFailed) -> AgentResult:
        self._state.finish()
        reply, cut = bound(self._state.reply(), self.limit_bytes)
        usage = self._usage(done.usage)
        if isinstance(done, TurnCompleted) and isinstance(done.limit, dict):
            # The nested SCV stopped at its own budget (what was left of ours): the same stop.
            self._meter.hit = LimitHit(kind=str(done.limit.get("kind")), max=done.limit.get("max", 0),
                                       used=done.limit.get("used", 0))
            raise Ended("limit", f"{self.name} was stopped: {self._meter.hit.sentence()}; the conversation can "
                                 "continue", keep=True)
        if isinstance(done, TurnCompleted):
            if done.reply or not reply:     # an omitted reply (read as "") leaves the streamed text
                reply, cut = bound(done.reply, self.limit_bytes)
            return self._result("completed", reply, usage or None, cut)
        reason = done.reason
        error = redact_message(done.error or "the nested turn failed")
        status = "cancelled" if reason in ("cancelled", "interrupted") else "failed"
        kind = verdict.classify(error) if reason == "provider" else None
        stopped = reason == "interrupted"
        if stopped:
            self._await_exit()
        raise self.failure(Ended(status, f"the nested scv's turn failed ({reason}): {error}", keep=not stopped,
                                 available=kind not in AVAILABILITY,
                                 hint=hint_for(self.name) if kind == "signin" else None),
                           self._result(status, reply, usage or None, cut))

    def _await_exit(self) -> None:
        """An interrupted turn: the nested SCV was signalled (`scv agents kill`, a shutdown) and
        exits right after it, so the conversation ends with it. Collected here, within the settle
        time (then stopped), so the call says who stopped it and no later call finds it half gone."""
        end = time.monotonic() + SETTLE_SECONDS
        while self.proc.alive and time.monotonic() < end:
            pumped = self.proc.pump(max(0.0, end - time.monotonic()), (), self.out)
            self._read(pumped.stdout, pumped.exited)
        self.proc.shutdown()

    def _usage(self, said: dict[str, Any]) -> dict[str, Any]:
        """The nested SCV's own ledger: its turns when it says them, else the rounds seen."""
        turns = as_count(said.get("turns"))
        usage = Usage(turns=turns if turns is not None else self._state.turns())
        take_tokens(usage, said.get("input_tokens"), said.get("output_tokens"), said.get("cached_input_tokens"))
        cost = as_cost(said.get("cost_usd"))
        if cost is not None and said.get("cost_source") in (REPORTED, PRICES, MIXED):
            usage.cost_usd, usage.cost_source = cost, said["cost_source"]
        return usage.wire()

    def _result(self, status: str, reply: str, usage, cut: bool) -> AgentResult:
        result = AgentResult(agent=self.name, status=status, reply=reply, usage=usage, exit_code=UNSET,
                             stderr_tail=UNSET, truncated=True if cut else UNSET,
                             private=AgentPrivate(cwd=self.cwd, available=True, vendor_session=self.session))
        return self.confined(result)

    # --- its events ----------------------------------------------------------------------------

    def _event(self, event: SessionEvent) -> None:
        turn_id = event.turn_id
        ours = self._turn_id is not None and turn_id == self._turn_id
        match event:
            case TurnStarted(origin=origin) if not ours:
                self._own_turn = turn_id
                self.jobs.turn_began(turn_id, origin)
                self._record_jobs()
            case TurnCompleted() | TurnFailed():
                if ours:
                    self._done = event
                if turn_id == self._own_turn:
                    self._own_turn = None
                self.jobs.turn_ended(turn_id)
                self._record_jobs()
            case ApprovalRequested():
                self._approval(event, ours)
            case ToolCompleted(jobs=jobs, tool=tool, ok=ok):
                if self.jobs.tool_completed(jobs):
                    self._record_jobs()
                if ours:
                    self._offer(f"{tool} {'done' if ok else 'failed'}")
            case _ if not ours:
                return
            case AssistantDelta(text=text):
                self._state.on_text(text)
            case AssistantText(text=text):
                self._state.end_text(text)
            case ToolStarted():
                self._offer(self._tool_line(event))
            case ToolProgress(line=line):
                self._offer(line)

    def _offer(self, line: str) -> None:
        if self._state is not None:
            self._state.offer(line)

    @staticmethod
    def _tool_line(started: ToolStarted) -> str:
        tool = started.tool or "tool"
        if tool == "bash":
            try:
                command = msgspec.json.decode(started.arguments or "{}").get("command")
            except (msgspec.DecodeError, AttributeError):
                command = None
            if isinstance(command, str) and command.strip():
                return f"bash {command}"
        summary = started.summary
        return f"{tool} {summary}" if summary and summary.strip() else tool

    def _approval(self, asked: ApprovalRequested, ours: bool) -> None:
        approved = False
        ctx = self._ctx
        if ours and ctx is not None and not ctx.token.cancelled:
            summary = f"[{self.handle} depth {self.depth}] {asked.summary}"
            approved = bool(ctx.ask(asked.tool or "agent", asked.risk or "delegate", summary))
            ctx.token.check()
        # Its own turns have no call to carry the request to a person: denied.
        self._send("approval.resolve", {"id": asked.id, "approved": approved})

    def _record_jobs(self) -> None:
        if self.proc.alive:
            self.proc.update_record(background_jobs=self.jobs.count or None)

    # --- between calls -------------------------------------------------------------------------

    def queued(self) -> bytearray:
        return self.out

    def idle_output(self, chunks: list[bytes], closing: bool) -> None:
        """Between calls its own turns' approval requests are denied and its jobs counted."""
        self._read(chunks, closing)


def start(args: dict[str, Any], ctx: WorkerContext) -> NestedScv:
    """The factory the live worker runtime calls with the conversation's first call."""
    return opened(NestedScv(args, ctx), args, ctx)
