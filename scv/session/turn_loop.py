"""One turn: the prompt, then model responses and their tool calls, until a final reply.

Tool calls run one at a time through the session's ToolRunner. Whatever the model gets wrong
(arguments that are not JSON or break the schema, an unknown tool, a denied approval) goes back
to it as that call's failed result, never a crash. The turn ends with `turn.completed`, or with
`turn.failed` when the provider fails, the turn limit is reached, or the turn is cancelled.
"""

import enum
import sys
from typing import TYPE_CHECKING, Any, Callable, Protocol

import msgspec

from scv.config.load import Config
from scv.core import events as ev
from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from scv.core.events import EventSink
from scv.core.limits import LimitHit
from scv.core.usage import Usage as LedgerUsage
from scv.core.messages import ApprovalRequest
from scv.core.progress import ProgressThrottle
from scv.core.risk import Risk
from scv.core.states import Moves
from scv.providers.base import (AssistantMessage, HistoryItem, ModelReply, ModelRequest, Provider, ProviderError,
                                ToolCall, ToolOutput, TurnCancelled, Usage, UserMessage)
from scv.session import spans
from scv.session.calls import ToolRunner
from scv.supervision.approval import relayed_verdict
from scv.telemetry.spans import Span

if TYPE_CHECKING:
    from scv.structured import ReplyVerdict


class Phase(enum.Enum):
    """What a running turn waits for; a client that cancels waits longer for a running tool."""
    IDLE = "idle"
    MODEL = "model"
    APPROVAL = "approval"
    TOOL = "tool"


# A turn asks the model, then for each tool call asks for approval and runs it; it ends (IDLE)
# from wherever it is, by its reply, a failure or a cancel.
PHASE_MOVES = Moves({Phase.IDLE: {Phase.MODEL, Phase.IDLE},
                     Phase.MODEL: {Phase.MODEL, Phase.APPROVAL, Phase.IDLE},
                     Phase.APPROVAL: {Phase.APPROVAL, Phase.TOOL, Phase.MODEL, Phase.IDLE},
                     Phase.TOOL: {Phase.MODEL, Phase.IDLE}})


def _enter(session: "TurnHost", phase: Phase) -> None:
    """The one transition function of a turn's phases."""
    session.phase = PHASE_MOVES.check("a turn", session.phase, phase)


class TurnHost(Protocol):
    """What a turn needs of its session (scv/session/session.py is the one)."""

    emit: EventSink
    provider: Provider
    runner: ToolRunner
    history: list[HistoryItem]
    system_prompt: str
    tool_schemas: tuple[dict[str, Any], ...]
    hosted_tools: tuple[dict[str, Any], ...]
    phase: Phase
    cancel_reason: str
    auto_approve: bool
    trace: Span                     # the span the session's turns are children of

    @property
    def config(self) -> Config: ...

    def new_turn_id(self) -> str: ...

    def ask(self, turn_id: str, tool: str, risk: Risk, summary: str, cancel: Cancellation) -> bool: ...

    def finish_reply(self, reply: ModelReply) -> str: ...


class TurnOutcome(msgspec.Struct, kw_only=True):
    turn_id: str
    status: str                     # "completed", "failed", "cancelled" or "limit"
    reply: str = ""
    error: str = ""
    reason: str = ""                # of a failure: "provider", "turn_limit", "cancelled", "internal", "schema_invalid"
    usage: Usage = msgspec.field(default_factory=Usage)
    verdict: "ReplyVerdict | None" = None  # with a schema: the final reply's check (the document, or its errors)
    limit: LimitHit | None = None   # status "limit": which one
    ledger: LedgerUsage = msgspec.field(default_factory=LedgerUsage)   # the turn's share of the run's ledger


# A structured run's check of a final reply; None when this turn's reply is not the one checked
# (scv exec with background jobs still outstanding checks only the last turn's).
ReplyCheck = Callable[[str], "ReplyVerdict | None"]


class TurnLimit(ProviderError):
    """The model kept asking for tools for `agent.max_turns` responses."""


class LimitReached(ProviderError):
    """The run's budget (turns, tokens or dollars, docs/limits.md) is spent: no further model request."""

    def __init__(self, hit: LimitHit):
        super().__init__(hit.sentence())
        self.hit = hit


def result_text(ok: bool, value: dict[str, Any]) -> str:
    """A tool result as the model reads it: its JSON with an `ok` flag first."""
    return msgspec.json.encode({"ok": ok, **value}).decode()


def run_turn(session: TurnHost, prompt: str, *, cancel: Cancellation, origin: dict[str, Any] | None = None,
             turn_id: str | None = None, check: ReplyCheck | None = None, parent: Span | None = None) -> TurnOutcome:
    """`check`: the final reply's check (scv exec --output-schema), with one repair turn; `parent`:
    the turn's span's parent, when not the session's (a client's `_meta.traceparent`)."""
    turn_id = turn_id or session.new_turn_id()
    emit = session.emit
    channel = session.ctx.channel
    if channel is not None:
        channel.begin_reply()       # the files chat_attach sends go with this turn's reply
    ev.emit(emit, ev.TurnStarted(turn_id=turn_id, prompt=prompt, origin=_given(origin)))
    outcome = TurnOutcome(turn_id=turn_id, status="failed")
    span = spans.turn_span(parent or session.trace, turn_id, prompt, session.config)
    session.history.append(UserMessage(text=prompt))
    budget = session.ctx.budget
    mark = budget.mark() if budget is not None else 0
    try:
        outcome.reply = _loop(session, turn_id, cancel, outcome.usage, span)
        outcome.verdict = None if check is None else check(outcome.reply)
        if outcome.verdict is not None and not outcome.verdict.ok:
            # One repair turn in the same conversation: a full turn (tools on, its own max_turns);
            # a limit or a cancellation in it ends the turn with that status instead.
            from scv.structured import repair_prompt     # a schema was given: the module is loaded
            session.history.append(UserMessage(text=repair_prompt(outcome.verdict)))
            outcome.reply = _loop(session, turn_id, cancel, outcome.usage, span)
            outcome.verdict = check(outcome.reply)
        if outcome.verdict is not None and not outcome.verdict.ok:
            outcome.reason = "schema_invalid"
            outcome.error = ("the final reply did not validate against the output schema after one repair turn: "
                             + "; ".join(f"{e['path'] or '(root)'}: {e['message']}" for e in outcome.verdict.errors))
        else:
            outcome.status = "completed"
    except LimitReached as err:
        outcome.status, outcome.reason, outcome.limit, outcome.reply = "limit", "limit", err.hit, ""
        outcome.error = str(err)
    except TurnCancelled:
        outcome.status, outcome.reason = "cancelled", session.cancel_reason
        outcome.error = f"the turn was cancelled ({session.cancel_reason})"
    except ProviderError as err:
        outcome.reason, outcome.error = ("turn_limit" if isinstance(err, TurnLimit) else "provider"), str(err)
    except Exception as err:
        # A bug of SCV's own must end this turn, not the server's turn thread: later turns still
        # run, and the traceback goes to stderr for the report.
        import traceback
        traceback.print_exc(file=sys.stderr)
        outcome.reason = "internal"
        outcome.error = (f"SCV failed with an internal error ({type(err).__name__}: {str(err)[:200]}); the "
                         "conversation is kept, so the turn can be retried; please report the traceback on stderr")
    finally:
        _enter(session, Phase.IDLE)
        spans.end_turn(span, outcome.status, outcome.reason, outcome.error, outcome.usage, outcome.reply,
                       session.config)
    files = msgspec.UNSET if channel is None else list(channel.reply)
    if budget is not None:
        outcome.ledger = budget.since(mark)
    # The ledger's shape, plus total_tokens as the protocol has always carried it.
    usage = {**outcome.ledger.wire(), "total_tokens": outcome.ledger.tokens()}
    if outcome.status == "limit":
        ev.emit(emit, ev.TurnCompleted(turn_id=turn_id, reply="", usage=usage, attachments=files,
                                       origin=_given(origin), limit=outcome.limit.wire()))
    elif outcome.status == "completed":
        if channel is not None:
            outcome.reply = channel.captioned(outcome.reply)
        structured = msgspec.UNSET if outcome.verdict is None else outcome.verdict.document
        ev.emit(emit, ev.TurnCompleted(turn_id=turn_id, reply=outcome.reply, usage=usage, attachments=files,
                                       origin=_given(origin), structured=structured))
    else:
        invalid = outcome.reason == "schema_invalid"
        ev.emit(emit, ev.TurnFailed(turn_id=turn_id, reason=outcome.reason, error=outcome.error, usage=usage,
                                    attachments=files, origin=_given(origin),
                                    errors=list(outcome.verdict.errors) if invalid else msgspec.UNSET,
                                    reply=outcome.reply if invalid else msgspec.UNSET))
    return outcome


def _given(value: dict[str, Any] | None) -> "dict[str, Any] | msgspec.UnsetType":
    return msgspec.UNSET if value is None else value


def _loop(session: TurnHost, turn_id: str, cancel: Cancellation, usage: Usage, span: Span) -> str:
    limit = session.config.agent.max_turns
    budget = session.ctx.budget
    for _ in range(limit):
        if cancel.cancelled:
            raise TurnCancelled("the turn was cancelled")
        hit = budget.hit() if budget is not None else None
        if hit is not None:
            raise LimitReached(hit)
        request = ModelRequest(system_prompt=session.system_prompt, history=tuple(session.history),
                               tools=session.tool_schemas, hosted_tools=session.hosted_tools)
        _enter(session, Phase.MODEL)
        asked = spans.model_span(span, session.provider)
        try:
            reply = session.provider.complete(
                request, cancel=cancel,
                on_text=lambda delta: ev.emit(session.emit, ev.AssistantDelta(turn_id=turn_id, text=delta)))
        except BaseException as err:
            asked.end(type(err).__name__)
            raise
        spans.end_model(asked, reply, session.config)
        usage.add(reply.usage)
        if budget is not None:
            # The ledger's input leaves cached input out: it is counted apart, and priced apart.
            cached = reply.usage.cached_input_tokens
            budget.spend(LedgerUsage(turns=1, input_tokens=reply.usage.input_tokens - cached,
                                     cached_input_tokens=cached, output_tokens=reply.usage.output_tokens),
                         session.provider.model)
        if reply.text:
            ev.emit(session.emit, ev.AssistantText(turn_id=turn_id, text=reply.text))
        if not reply.tool_calls:
            session.history.append(AssistantMessage(text=reply.text))
            return session.finish_reply(reply)
        hit = budget.hit() if budget is not None else None
        if hit is not None:
            # This response's calls do not run; each gets an output, so the conversation stays whole.
            session.history.append(AssistantMessage(text=reply.text, tool_calls=reply.tool_calls))
            session.history.extend(ToolOutput(call_id=call.id, output=result_text(False, {
                "error": f"not run: {hit.sentence()}"})) for call in reply.tool_calls)
            raise LimitReached(hit)
        outputs = [_tool_call(session, turn_id, call, cancel, span) for call in reply.tool_calls]
        # The model's calls and every result enter the history together, so the next request
        # (in this turn or, after a cancellation, the next) always pairs each call with an output.
        session.history.append(AssistantMessage(text=reply.text, tool_calls=reply.tool_calls))
        session.history.extend(outputs)
        if cancel.cancelled:
            raise TurnCancelled("the turn was cancelled")
    raise TurnLimit(f"the model asked for tools in {limit} responses in a row without a final reply "
                    "(agent.max_turns); the turn stopped")


def _tool_call(session: TurnHost, turn_id: str, call: ToolCall, cancel: Cancellation, turn: Span) -> ToolOutput:
    if cancel.cancelled:
        return ToolOutput(call_id=call.id, output=result_text(False, {"error": "the turn was cancelled before this "
                                                                               "call ran"}))
    span = spans.tool_span(turn, call, session.config)
    approval: list[str | None] = [None]
    try:
        ok, value = _run_call(session, turn_id, call, cancel, span, approval)
    except BaseException as err:
        span.end(type(err).__name__)
        raise
    spans.end_tool(span, ok, value, approval[0])
    return _completed(session, turn_id, call, ok, value)


def _run_call(session: TurnHost, turn_id: str, call: ToolCall, cancel: Cancellation, span: Span,
              approval: list[str | None]) -> tuple[bool, dict[str, Any]]:
    """The call's result (ok, value); `approval` gets how it was approved, for its span."""
    emit = session.emit
    started = {"turn_id": turn_id, "call_id": call.id, "tool": call.name, "arguments": call.arguments}
    try:
        prepared = session.runner.prepare(call.name, call.arguments)
    except RefusedError as err:
        ev.emit(emit, ev.ToolStarted(**started, risk=None, summary=None))
        return False, {"error": str(err), "refused": True}
    ev.emit(emit, ev.ToolStarted(**started, risk=prepared.risk.value, summary=prepared.summary))
    if span.recording:
        span.set({"scv.tool.risk": prepared.risk.value})
    budget = session.ctx.budget
    hit = budget.hit() if budget is not None else None
    if hit is not None:
        # An earlier call of this response (its job) spent the rest of the run's budget: ask nothing.
        return False, {"error": f"not run: {hit.sentence()}"}
    _enter(session, Phase.APPROVAL)
    answers: list[bool] = []

    def approver(tool: str, risk: Risk, summary: str) -> bool:
        answers.append(session.ask(turn_id, tool, risk, summary, cancel))
        return answers[-1]

    try:
        session.runner.approve(prepared, approver=approver)
    except RefusedError as err:
        approval[0] = "denied"
        hit = budget.hit() if budget is not None else None
        if hit is not None and not cancel.cancelled:
            # The request was answered cancelled when the run's budget ran out while it waited.
            return False, {"error": f"not run: {hit.sentence()}"}
        return False, {"error": str(err), "refused": True}
    approval[0] = "approved" if answers and not session.auto_approve else "auto"
    if cancel.cancelled:
        return False, {"error": "the turn was cancelled before this call ran"}
    hit = budget.hit() if budget is not None else None
    if hit is not None:
        # A background job spent the rest of the run's budget while the approval waited: the
        # call does not run, and the loop stops before its next model request.
        return False, {"error": f"not run: {hit.sentence()}"}
    throttle = ProgressThrottle(lambda line: ev.emit(emit, ev.ToolProgress(turn_id=turn_id, call_id=call.id,
                                                                           line=line)))

    def relayed_approval(ask: ApprovalRequest) -> bool:
        return relayed_verdict(session.config.tools.approval_policy, ask,
                               lambda risk: session.ask(turn_id, ask.tool, risk, ask.summary, cancel))

    _enter(session, Phase.TOOL)
    try:
        result = session.runner.run(prepared, cancel=cancel, on_progress=throttle.offer,
                                    on_approval=relayed_approval, span=span)
    finally:
        _enter(session, Phase.MODEL)
    throttle.finish()
    return result.ok, result.value


def _completed(session: TurnHost, turn_id: str, call: ToolCall, ok: bool, value: dict[str, Any]) -> ToolOutput:
    jobs = job_changes(value)
    ev.emit(session.emit, ev.ToolCompleted(turn_id=turn_id, call_id=call.id, tool=call.name, ok=ok, result=value,
                                           jobs=jobs or msgspec.UNSET))
    return ToolOutput(call_id=call.id, output=result_text(ok, value))


def job_changes(value: dict[str, Any]) -> list[dict[str, str]]:
    """The background jobs a call started or showed, by handle and status, whatever the tool: a
    parent following this session (a nested SCV's caller) counts its jobs from these."""
    entries = value.get("jobs") if isinstance(value.get("jobs"), list) else [value]
    return [{"job": e["job"], "status": e["status"]} for e in entries
            if isinstance(e, dict) and isinstance(e.get("job"), str) and isinstance(e.get("status"), str)]
