"""The ACP backend of the `agent` tool: one ACP server process per conversation (claude-agent-acp,
codex-acp, `grok agent stdio`, `dsh --profile acp`), one ACP session on it, one `session/prompt`
per call.

    initialize {protocolVersion: 1, no fs or terminal capabilities}
    -> session/new {cwd, mcpServers: []} -> [session/set_mode for permissions = "full"]
    -> [session/set_config_option for model/effort] -> session/prompt per call

The agent's permission requests go through the calling session's approval gate (`ctx.ask`);
`fs/*`, `terminal/*` and any other request of the agent get "method not found". A cancelled or
timed-out call sends `session/cancel`: an agent that settles within 2 s keeps the conversation,
otherwise the server is shut down and the conversation ends.
"""

import time
from typing import Any

import msgspec

from scv import __version__
from scv.core import traceparent
from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.messages import AgentResult
from workers.agents import verdict
from workers.agents.capture import bound
from workers.agents.outcome import ROOT_HINT, hint_for
from workers.agents.redact import redact_message
from scv.core.limits import Limits, Meter
from scv.core.usage import Usage
from workers.agents.report import AVAILABILITY, take_tokens
from workers.live import acp_turn
from workers.live.acp_wire import (AUTH_REQUIRED, INVALID_PARAMS, METHOD_NOT_FOUND, PROTOCOL_VERSION,
                                   CancelledOutcome, CancelParams, ClientCapabilities, ClientInfo, ConfigOption,
                                   ConfigOptionsResult, ConfigOptionUpdate, Incoming, InitializeParams,
                                   InitializeResult, NewSessionParams, NewSessionResult, PermissionParams,
                                   PermissionResult, PromptParams, PromptResult, Response, RpcError,
                                   SelectedOutcome, SetConfigOptionParams, SetModeParams, TextBlock, Wire,
                                   WireError, decode_as, decode_update)
from workers.live.conversation import SETTLE_SECONDS, Ended, LiveConversation, opened
from workers.runtime import ToolFailure, WorkerContext

# What a session option of each kind is called: by category first, then by the ids agents use.
OPTION_KINDS = {"model": (("model",), ("model",)),
                "effort": (("thought_level",), ("effort", "reasoning_effort", "thought_level"))}


class AcpAgent(LiveConversation):
    def __init__(self, args: dict[str, Any], ctx: WorkerContext):
        server = DESCRIPTORS[args["agent"]].acp
        if server is None:
            raise ToolFailure(f"{args['agent']} has no ACP server; it runs one CLI process per turn")
        self.full_modes = server.full_permission_modes if args.get("full_permissions") else ()
        self.asking_modes = () if args.get("full_permissions") else server.asking_modes
        extra = dict(server.full_permission_env) if args.get("full_permissions") else {}
        super().__init__(args, ctx, extra_env=extra)
        self.wire = Wire()
        self.session: str | None = None
        self.options: list[ConfigOption] = []
        self._answers: dict[int, Response] = {}
        self._turn: acp_turn.TurnState | None = None
        self._stopping: str | None = None          # "cancelled" | "timeout" | "limit" while a prompt settles
        self._meter = Meter(Limits())
        self._settle_by = 0.0
        self._prompt: int | None = None

    # --- the conversation's start --------------------------------------------------------------

    def open(self, args: dict[str, Any], ctx: WorkerContext) -> None:
        deadline = self._first_deadline or time.monotonic() + ctx.call.timeout_seconds
        capabilities = InitializeParams(PROTOCOL_VERSION, ClientCapabilities(), ClientInfo("scv", __version__))
        answer = self._ask_agent("initialize", capabilities, ctx, deadline)
        self._check(answer, "initialize")
        try:
            init = decode_as(answer.result, InitializeResult)
        except WireError as err:
            raise Ended("failed", f"{self.server} answered initialize with something that is not ACP ({err})",
                        keep=False, available=False) from None
        if init.protocol_version != PROTOCOL_VERSION:
            raise Ended("failed", f"{self.server} speaks ACP protocol version {init.protocol_version}; SCV speaks "
                                  f"version {PROTOCOL_VERSION}: install a release of it that speaks version "
                                  f"{PROTOCOL_VERSION}, or set [agents.{self.name}] transport = \"resume\"",
                        keep=False, available=False)
        answer = self._ask_agent("session/new", NewSessionParams(self.cwd), ctx, deadline)
        self._check(answer, "session/new")
        new = self._decoded(answer, NewSessionResult, "session/new")
        self.session = new.session_id
        self.options = list(new.config_options or [])
        if self.full_modes:
            self._full_permissions(new, ctx, deadline)
        elif self.asking_modes and self._current_mode(new) not in self.asking_modes:
            self._select_mode(new, self.asking_modes, ctx, deadline)

    def _current_mode(self, new: NewSessionResult):
        mode_option = self._option(("mode",), ("mode",))
        if mode_option is not None:
            return mode_option.current_value
        return new.modes.current_mode_id if new.modes else None

    def _select_mode(self, new: NewSessionResult, wanted: tuple[str, ...], ctx: WorkerContext,
                     deadline: float) -> list[str] | None:
        """Selects the first of `wanted` the agent advertises (a session mode, or a value of its
        `mode` option); None when it did, else the modes it offers."""
        modes = [m.id for m in (new.modes.available_modes if new.modes else [])]
        mode_option = self._option(("mode",), ("mode",))
        values = mode_option.values() if mode_option else []
        for mode in wanted:
            if mode in modes:
                answer = self._ask_agent("session/set_mode", SetModeParams(self.session, mode), ctx, deadline)
                self._check(answer, "session/set_mode")
                return None
            if mode in values:
                self._set_option(mode_option, mode, ctx, deadline, "mode")
                return None
        return modes or values

    def _full_permissions(self, new: NewSessionResult, ctx: WorkerContext, deadline: float) -> None:
        """The agent's own full-access mode, as it advertises it; selected in every new session."""
        offered = self._select_mode(new, self.full_modes, ctx, deadline)
        if offered is None:
            return
        text = (f"{self.server} offers no full-permission mode ({' or '.join(self.full_modes)}) in this session; "
                f"the modes it offers: {', '.join(offered) or 'none'}")
        hint = None
        if "bypassPermissions" in self.full_modes:
            text += ". Claude Code hides bypassPermissions when it runs as root"
            hint = ROOT_HINT.format(agent=self.name)
        raise Ended("failed", text, keep=False, hint=hint)

    # --- one call ------------------------------------------------------------------------------

    def turn(self, args: dict[str, Any], ctx: WorkerContext) -> AgentResult:
        self.begin_turn(args)
        deadline = self.deadline(ctx)
        throttle = self.throttle(ctx)
        state = acp_turn.TurnState(self.limit_bytes, throttle.offer)
        self._stopping = None
        # Turns are checked as each round of tool calls arrives; tokens only come with the prompt's
        # result, so a token limit is the caller's to check then (docs/limits.md).
        self._meter = Meter.of(args)
        try:
            for kind in ("model", "effort"):
                if args.get(kind):
                    self._select(kind, args[kind], ctx, deadline)
            self._turn = state
            meta = traceparent.to_meta(traceparent.from_options(ctx.options)) or msgspec.UNSET
            self._prompt = self.wire.request("session/prompt", PromptParams(self.session, [TextBlock(args["prompt"])],
                                                                            meta))
            answer = self._await(self._prompt, ctx, deadline, throttle)
            return self._outcome(answer, state)
        except Ended as ended:
            state.finish()
            reply, cut = bound(state.reply(), self.limit_bytes)
            usage = Usage(turns=state.rounds).wire()
            result = self.result(ended.status, reply, usage, cut or state.cut)
            if ended.status == "limit" and self._meter.hit is not None:
                result.reply, result.limit = "", self._meter.hit.wire()
            raise self.failure(ended, result) from None
        finally:
            self._turn = None
            self._prompt = None
            state.finish()
            throttle.finish()
            self.end_turn()

    def _outcome(self, answer: Response, state: acp_turn.TurnState) -> AgentResult:
        state.finish()
        reply, cut = bound(state.reply(), self.limit_bytes)
        if self._stopping is not None:
            # The agent settled after session/cancel: the turn is over, the conversation goes on.
            what = ("ran past the timeout and its turn was cancelled" if self._stopping == "timeout"
                    else f"was stopped: {self._meter.hit.sentence()}" if self._stopping == "limit"
                    else "was cancelled")
            raise Ended(self._stopping, f"{self.name} {what}; the conversation can continue", keep=True)
        self._check(answer, "session/prompt")
        prompt = self._decoded(answer, PromptResult, "session/prompt")
        usage = Usage(turns=state.turns())
        if prompt.usage is not None:
            take_tokens(usage, prompt.usage.input_tokens, prompt.usage.output_tokens, prompt.usage.cached_read_tokens)
        result = self.result("completed", reply, usage.wire(), cut or state.cut)
        result.keep_private(vendor_session=self.session)
        reason = prompt.stop_reason
        if reason == "end_turn":
            return result
        if reason == "refusal":
            result.status = "declined"
            return result
        if reason == "cancelled":
            why = " after a permission it asked for was denied" if state.denied else ""
            raise self.failure(Ended("cancelled", f"{self.name} ended its turn as cancelled{why}", keep=True), result)
        result.reply = (reply + "\n\n" if reply else "") + f"(stopped early: {reason})"
        return result

    # --- model and effort ----------------------------------------------------------------------

    def _option(self, categories: tuple[str, ...], ids: tuple[str, ...]) -> ConfigOption | None:
        for option in self.options:
            if option.category in categories:
                return option
        return next((o for o in self.options if o.id in ids), None)

    def _select(self, kind: str, value: str, ctx: WorkerContext, deadline: float) -> None:
        option = self._option(*OPTION_KINDS[kind])
        if option is None:
            raise Ended("failed", f"{self.server} offers no {kind} option in this session; omit {kind} (the agent "
                                  "uses its own default)", keep=True)
        if option.current_value == value:
            return
        self._set_option(option, value, ctx, deadline, kind)

    def _set_option(self, option: ConfigOption, value: str, ctx: WorkerContext, deadline: float, kind: str) -> None:
        answer = self._ask_agent("session/set_config_option", SetConfigOptionParams(self.session, option.id, value),
                                 ctx, deadline)
        if answer.error is not None:
            offered = ", ".join(option.values()) or "none listed"
            raise Ended("failed", f"{self.name} does not offer {kind} {value!r} "
                                  f"({redact_message(answer.error.text(), 300)}); it offers: {offered}", keep=True)
        try:
            updated = decode_as(answer.result, ConfigOptionsResult).config_options
        except WireError:
            updated = None
        if updated:
            self.options = list(updated)

    # --- errors --------------------------------------------------------------------------------

    def _check(self, answer: Response, what: str) -> None:
        if answer.error is not None:
            raise self._error(answer.error, what)

    def _error(self, error: RpcError, what: str) -> Ended:
        text = redact_message(error.text())
        message = f"{self.name} failed at {what}: {text}"
        signin = error.code == AUTH_REQUIRED and "auth" in error.message.lower() or verdict.reads_like_signin(text)
        kind = "signin" if signin else verdict.classify(text)
        return Ended("failed", message, keep=self.session is not None, available=kind not in AVAILABILITY,
                     hint=hint_for(self.name) if signin else None)

    def _decoded(self, answer: Response, kind: type, what: str):
        try:
            return decode_as(answer.result, kind)
        except WireError as err:
            raise Ended("failed", f"{self.server} answered {what} with something that is not ACP ({err})",
                        keep=self.session is not None) from None

    # --- waiting for an answer -----------------------------------------------------------------

    def _ask_agent(self, method: str, params, ctx: WorkerContext, deadline: float) -> Response:
        return self._await(self.wire.request(method, params), ctx, deadline, None)

    def _await(self, request_id: int, ctx: WorkerContext, deadline: float, throttle) -> Response:
        """Reads the agent until it answers `request_id`, relaying what comes meanwhile. A cancel or
        the deadline while a prompt runs sends session/cancel and allows SETTLE_SECONDS."""
        while True:
            answer = self._answers.pop(request_id, None)
            if answer is not None:
                return answer
            now = time.monotonic()
            if self._stopping is None and (ctx.token.cancelled or now >= deadline):
                self._begin_stop("cancelled" if ctx.token.cancelled else "timeout", request_id)
            if self._stopping is not None and now >= self._settle_by:
                # STOPPING -> SHUT DOWN: the agent did not settle in time; the conversation ends.
                self.proc.shutdown()
                raise Ended(self._stopping, self._unsettled(), keep=False)
            until = self._settle_by if self._stopping is not None else deadline
            self._flush()
            pumped = self.proc.pump(self.wait_seconds(until), ctx.token.fds(), self.wire.out)
            if pumped.ready:
                ctx.token.check()
            for chunk in pumped.stdout:
                self._dispatch(self.wire.feed(chunk), ctx)
            if throttle is not None:
                self.woke()
            if pumped.exited:
                self._dispatch(self.wire.close(), ctx)
                answer = self._answers.pop(request_id, None)
                if answer is not None:
                    return answer
                self.proc.forget()
                raise Ended("failed", f"{self.server} {self.proc.exit_text()} during the call"
                                      f"{self._stderr_note()}", keep=False, available=False)

    def _begin_stop(self, reason: str, request_id: int) -> None:
        if request_id != self._prompt:
            # No prompt runs (the handshake, or a model change): nothing to cancel in the agent.
            keep = self.session is not None
            if not keep:
                self.proc.shutdown()
            what = "was cancelled" if reason == "cancelled" else "ran past the timeout"
            raise Ended(reason, f"{self.name} {what} before its turn started", keep=keep)
        # RUNNING -> STOPPING: ask the agent to stop; its pending permission requests are cancelled.
        self._stopping = reason
        self._settle_by = time.monotonic() + SETTLE_SECONDS
        self.wire.notify("session/cancel", CancelParams(self.session))
        self._flush()

    def _unsettled(self) -> str:
        what = {"timeout": "ran past the timeout", "limit": "reached its limit"}.get(self._stopping, "was cancelled")
        return (f"{self.name} {what} and did not end its turn within {SETTLE_SECONDS:g} s of session/cancel, so its "
                "server was stopped; start a new conversation (omit session)")

    def _stderr_note(self) -> str:
        tail = self.proc.stderr.text().strip()
        return f"; its stderr ends: {redact_message(tail[-300:], 300)}" if tail else ""

    def _flush(self) -> None:
        self.proc.flush(self.wire.out)

    # --- what the agent sends ------------------------------------------------------------------

    def _dispatch(self, messages: list, ctx: WorkerContext | None) -> None:
        for message in messages:
            if isinstance(message, Response):
                self._answers[message.id] = message
            elif message.id is None:
                self._notification(message)
            else:
                self._request(message, ctx)
        self._flush()

    def _notification(self, message: Incoming) -> None:
        if message.method != "session/update":
            return                  # unknown notifications are ignored
        update = decode_update(message.params)
        if isinstance(update, ConfigOptionUpdate) and update.config_options:
            self.options = list(update.config_options)
        elif update is not None and self._turn is not None:
            self._turn.on_update(update)
            if self._meter.on and self._stopping is None and self._prompt is not None \
                    and self._meter.check(Usage(turns=self._turn.rounds)) is not None:
                self._begin_stop("limit", self._prompt)     # session/cancel; the conversation is kept

    def _request(self, message: Incoming, ctx: WorkerContext | None) -> None:
        if message.method != "session/request_permission":
            family = message.method.split("/", 1)[0]
            why = (f"SCV offers no client {family} capability" if family in ("fs", "terminal")
                   else f"SCV does not serve {message.method}")
            self.wire.respond_error(message.id, METHOD_NOT_FOUND, f"Method not found: {why}")
            return
        try:
            params = decode_as(message.params, PermissionParams)
        except WireError as err:
            self.wire.respond_error(message.id, INVALID_PARAMS, f"Invalid params: {err}")
            return
        if self._turn is None or ctx is None:
            # Between calls no one can be asked: like a session without an approval gate.
            self._answer(message.id, params, approved=False)
            return
        if self._stopping is not None:
            self.wire.respond(message.id, PermissionResult(CancelledOutcome()))
            return
        approved = bool(ctx.ask("agent", acp_turn.risk_of(params), acp_turn.summary_of(self.handle, params)))
        if ctx.token.check() and self._stopping is None and self._prompt is not None:
            self._begin_stop("cancelled", self._prompt)
        if self._stopping is not None:
            self.wire.respond(message.id, PermissionResult(CancelledOutcome()))
            return
        if not approved:
            self._turn.denied += 1
        self._answer(message.id, params, approved)

    def _answer(self, request_id, params: PermissionParams, approved: bool) -> None:
        option = acp_turn.choose_option(params.options, approved)
        outcome = SelectedOutcome(option) if option is not None else CancelledOutcome()
        self.wire.respond(request_id, PermissionResult(outcome))

    # --- between calls -------------------------------------------------------------------------

    def queued(self) -> bytearray:
        return self.wire.out

    def idle_output(self, chunks: list[bytes], closing: bool) -> None:
        """Between calls updates are dropped and requests answered as with no approval gate."""
        for chunk in chunks:
            self._dispatch(self.wire.feed(chunk), None)
        if closing:
            self._dispatch(self.wire.close(), None)


def start(args: dict[str, Any], ctx: WorkerContext) -> AcpAgent:
    """The factory the live worker runtime calls with the conversation's first call."""
    return opened(AcpAgent(args, ctx), args, ctx)
