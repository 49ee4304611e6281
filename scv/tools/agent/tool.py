"""`agent`: hands work to a delegated coding agent (Claude Code, Codex, Grok Build, DeepSeek
Harness, pi) and returns one structured result, whatever the agent printed.

This spec chooses the agent (session handle, then `agent`, then the user's `[agent] prefer`),
checks the call against what that agent takes before any approval, and plans it once: the
`AgentCall` it prepares is what every later hook receives. The call runs on the agent's backend
(scv/tools/agent/: today's CLI once per turn, or a live backend that keeps one agent process
for a conversation); this spec keeps the conversations and reads the backend's private report.
The model sees this one schema whichever backend runs.
"""

import dataclasses
import functools
import os
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from scv.agents.conversations import Conversation
from scv.agents.describe import agent_argument, default_agent, delegating_section
from scv.agents.offered import OfferedAgent
from scv.agents.session import AgentSession
from scv.config.load import scv_home
from scv.core.agents.options import EFFORTS, blank_to_none, check_effort, check_model, check_prompt
from scv.core.errors import RefusedError
from scv.core.limits import Limits, spent
from scv.core.messages import Result
from scv.core.usage import Price, Usage
from scv.core.sandbox.policy import label
from scv.sandbox.choose import request_for
from scv.tools.agent.acp import AcpBackend
from scv.tools.agent.backend import AgentBackend, AgentCall
from scv.tools.agent.cli import CliBackend
from scv.tools.agent.nested import NestedScvBackend
from scv.tools.agent.spans import agent_span, end_agent
from scv.tools.base import BackgroundCall, Launch, Risk, ToolContext, ToolSpec, set_maximum


_RUNNING_TOTALS = {"codex": ("input_tokens", "cached_input_tokens", "output_tokens"), "claude": ("cost_usd",)}


class AgentArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    prompt: Annotated[str, Meta(description="The task, in full: the agent sees nothing of this conversation.")]
    agent: str | None = None
    session: Annotated[str, Meta(description=(
        "A handle from an earlier result (such as codex-2) to continue that conversation; omit it to start "
        "a new one."))] | None = None
    cwd: Annotated[str, Meta(description=(
        "A directory inside the workspace to run in (relative or absolute), such as a project folder whose "
        "AGENTS.md or CLAUDE.md and skills the agent should pick up; default the workspace root."))] | None = None
    model: Annotated[str, Meta(description=(
        "The model for this call, in the agent's own naming (see its line); set it only when the user asks or "
        "the work matches a configured use_for default. Omit it to keep the agent's own default."))] | None = None
    effort: Annotated[str, Meta(description=(
        "Reasoning effort: low, medium, high, xhigh, or max; set it only when the user asks or the work "
        "matches a configured use_for default. Omit it to keep the agent's own default."))] | None = None
    timeout_seconds: Annotated[int, Meta(ge=1, description=(
        "Seconds before the agent is stopped (default tools.agent_timeout_seconds); raise it for long work."))] | None = None
    schema: Annotated[dict[str, Any], Meta(description=(
        "A JSON Schema (Draft 2020-12, at most 64 KiB) the agent's final reply must validate against; the "
        "result then carries the document as structured, or status schema_invalid with errors."))] | None = None
    background: Annotated[bool, Meta(description=(
        "Run as a background job: the call returns a job handle at once and the result is reported when it "
        "finishes (agent_wait, agent_status and agent_cancel manage jobs)."))] = False


def _takers(offered: dict[str, OfferedAgent], option: str) -> str:
    names = [name for name, o in offered.items() if o.takes(option)]
    return ", ".join(names) if names else "none on offer"


MAX_ARGUMENT_SCHEMA_BYTES = 64 * 1024


def _checked_schema(schema: dict[str, Any]) -> str:
    """The instruction for a `schema` argument, refused before approval when it cannot be used."""
    from scv.structured import SchemaError, check_schema, compact, instruction
    size = len(compact(schema).encode())
    if size > MAX_ARGUMENT_SCHEMA_BYTES:
        raise RefusedError(f"agent schema is {size} bytes of compact JSON, over the 64 KiB bound; make it smaller")
    try:
        check_schema(schema, "agent schema")
    except SchemaError as err:
        raise RefusedError(str(err)) from None
    return instruction(schema)


class AgentTool(ToolSpec):
    name = "agent"
    description = ("Hand a task to another coding agent (a delegated CLI such as Claude Code or Codex) and get one "
                   "result: agent, status (completed, failed, declined, timeout, cancelled, limit), reply, usage, "
                   "exit_code, stderr_tail, truncated, plus error, hint, note, fallback, rate_limit, limit, session "
                   "and turn when they apply. The agent works on its own with its own credentials.")
    Args = AgentArgs
    example = {"agent": "codex", "prompt": "Land the fix with the feature-flow skill.", "cwd": "scv",
               "model": "gpt-5.5", "effort": "high", "timeout_seconds": 7200}
    executor = "workers.agent:execute"
    declared_risk = Risk.DELEGATE

    # --- which agent, and is the call acceptable --------------------------------------------

    BACKENDS: dict[str, AgentBackend] = {b.transport: b for b in (CliBackend(), AcpBackend(), NestedScvBackend())}

    def _agents(self) -> AgentSession:
        if self.services.agents is None:
            raise RefusedError("no agent is offered here; the agent tool needs a session with delegated agents")
        return self.services.agents

    def backend_for(self, offered: OfferedAgent) -> AgentBackend:
        choose = self._agents().choose_backend
        return choose(offered) if choose is not None else self.BACKENDS[offered.transport]

    def prepare(self, args: AgentArgs, ctx: ToolContext) -> AgentCall:
        state = self._agents()
        offered = state.offered
        choices = ", ".join(offered) or "none"
        requested = blank_to_none(args.agent)
        handle = blank_to_none(args.session)
        conversation = None
        if handle is not None:
            # The handle decides first; an agent that cannot take one explains an unknown handle better.
            if (not state.conversations.knows(handle) and requested in offered
                    and not offered[requested].takes("session")):
                raise RefusedError(f"{requested} does not take session; these agents do: "
                                   f"{_takers(offered, 'session')}. Omit session, or call one of them")
            conversation = state.conversations.get(handle)
            if requested is not None and requested != conversation.agent:
                raise RefusedError(f"conversation {handle} belongs to {conversation.agent}, not {requested}; omit "
                                   f"agent to continue it, or omit session to start a new conversation with "
                                   f"{requested}")
            name = conversation.agent
        elif requested is not None:
            name = requested
        else:
            name = default_agent(ctx.config, list(offered))
            if name is None:
                raise RefusedError("name the agent: the user prefers none of the agents this session offers "
                                   f"([agent] prefer); choose one of: {choices}")
        if name not in offered:
            raise RefusedError(f'agent "{name}" is not offered in this session; choose one of: {choices}')
        chosen = offered[name]
        model, effort, cwd = blank_to_none(args.model), blank_to_none(args.effort), blank_to_none(args.cwd)
        for option, value in (("model", model), ("effort", effort), ("session", handle)):
            if value is not None and not chosen.takes(option):
                raise RefusedError(f"{name} does not take {option}; these agents do: {_takers(offered, option)}. "
                                   f"Omit {option}, or call one of them")
        check_prompt(args.prompt)
        prompt = args.prompt if args.schema is None else args.prompt + "\n\n" + _checked_schema(args.schema)
        if model is not None:
            check_model(model)
        if effort is not None:
            check_effort(effort)
        if cwd is not None:
            self._check_cwd(cwd, ctx)
        if conversation is not None:
            if not conversation.idle:
                raise RefusedError(f"session busy: conversation {handle} is running a turn or about to; wait for its "
                                   "result, or omit session to start a new conversation")
            if conversation.cwd is not None and cwd is not None:
                wanted = os.path.realpath(os.path.join(ctx.workspace, cwd))
                if wanted != conversation.cwd:
                    raise RefusedError(f"conversation {handle} runs in {conversation.cwd}, not {wanted}; omit cwd to "
                                       "continue it there, or omit session to start a new conversation there")
        ceiling = ctx.config.tools.max_timeout_seconds
        if args.timeout_seconds is not None and args.timeout_seconds > ceiling:
            raise RefusedError(f"agent timeout_seconds {args.timeout_seconds} is over the ceiling of {ceiling} "
                               "seconds (tools.max_timeout_seconds); ask for at most that")
        if args.background:
            jobs = self.services.jobs
            if ctx.config.agent.max_background <= 0:
                raise RefusedError("background jobs are off (agent.max_background = 0); run the agent call without "
                                   "background")
            if jobs is None:
                raise RefusedError("background jobs belong to a session (scv exec or scv server --stdio) and there "
                                   "is none here; run the agent call without background")
            jobs.check_can_start()
        request_for(ctx.config, ctx.workspace, name)     # refuses a sandbox this kernel cannot give
        settings = ctx.config.agents.get(name)
        full = settings is not None and settings.permissions == "full"
        timeout = float(args.timeout_seconds or ctx.config.tools.agent_timeout_seconds)
        allowance, price = self._allowance(chosen, model, ctx)
        call = AgentCall(offered=chosen, backend=self.backend_for(chosen), conversation=conversation,
                         prompt=prompt, model=model, effort=effort, cwd=cwd, full_permissions=full,
                         timeout_seconds=timeout, background=args.background, session_id=state.session_id,
                         schema=args.schema, allowance=allowance, price=price)
        call.backend.check(call)
        return call

    def _allowance(self, chosen: OfferedAgent, model: str | None, ctx: ToolContext) -> tuple[Limits, Price | None]:
        """The call's limits: [agents.NAME]'s and what is left of the run's, the smaller; refused now
        when its stream cannot show what a token or USD limit counts. No argument of the model's sets one."""
        from scv.config.agents import agent_limits
        from scv.core.limits import uncheckable
        name = chosen.descriptor.name
        settings = ctx.config.agents.get(name)
        budget = ctx.budget
        own = agent_limits(settings)
        allowance = budget.allowance(own) if budget is not None else own
        if budget is not None:
            prices = budget.prices
        else:
            from scv.config.load import prices_of
            prices = prices_of(ctx.config)
        model = model or (settings.model if settings is not None else None)
        transport = self.backend_for(chosen).transport
        fmt = "nested" if chosen.descriptor.nested else "acp" if transport == "acp" else chosen.descriptor.output_format
        why = uncheckable(allowance, name, fmt, model, prices)
        if why is not None:
            raise RefusedError(why)
        return allowance, prices.get(model) if model else None

    @staticmethod
    def _check_cwd(cwd: str, ctx: ToolContext) -> None:
        if "\x00" in cwd:
            raise RefusedError("agent cwd contains a NUL byte; remove it")
        root = str(ctx.workspace)
        joined = os.path.normpath(os.path.join(root, cwd))
        if joined != root and not joined.startswith(root.rstrip(os.sep) + os.sep):
            raise RefusedError(f"agent cwd {cwd!r} is outside the workspace; pass a directory inside it")

    # --- what the person approving sees ------------------------------------------------------

    def risk(self, call: AgentCall, ctx: ToolContext) -> Risk:
        return Risk.DELEGATE

    def timeout_seconds(self, call: AgentCall, ctx: ToolContext) -> float:
        return call.timeout_seconds

    def summary(self, call: AgentCall, ctx: ToolContext) -> str:
        text = call.backend.summary(call, ctx)
        request = request_for(ctx.config, ctx.workspace, call.name)
        if request is not None:
            text += f" In SCV's {label(request)}, with its own home writable."
        return text

    # --- the run -----------------------------------------------------------------------------

    def background(self, call: AgentCall, ctx: ToolContext) -> BackgroundCall[AgentCall] | None:
        if not call.background:
            return None
        if call.conversation is None:
            return BackgroundCall(dataclasses.replace(call, background=False), agent=call.name)
        # Held from now until the job's thread begins the turn, so no other call evicts it meanwhile.
        conversations = self._agents().conversations
        conversations.reserve(call.conversation)
        return BackgroundCall(dataclasses.replace(call, background=False), agent=call.name,
                              conversation=call.conversation.handle,
                              release=functools.partial(conversations.release, call.conversation))

    def options(self, ctx: ToolContext) -> dict[str, Any]:
        return {"scv_home": str(scv_home())}

    def run(self, call: AgentCall, ctx: ToolContext, launch: Launch) -> Result:
        span = agent_span(launch.span, call, ctx.config)
        try:
            result = self._run(call, ctx, launch.under(span))
        except BaseException as err:
            span.end(type(err).__name__)
            raise
        end_agent(span, result.value, ctx.config)
        return result

    def _run(self, call: AgentCall, ctx: ToolContext, launch: Launch) -> Result:
        hit = spent(call.allowance)
        if hit is not None:
            # The run's budget was spent between the plan and the run (by a background job).
            return Result(ok=False, value={"agent": call.name, "status": "limit", "reply": "", "usage": None,
                                           "limit": hit.wire(), "error": f"{call.name} did not start: "
                                           f"{hit.sentence()}"})
        conversations = self._agents().conversations
        conversation = call.conversation
        if conversation is None and call.backend.keeps_conversations(call):
            conversation = conversations.start(call.name)   # a schema's repair turn continues it
        result = self._turn(call, conversation, ctx, launch)
        if call.schema is None or result.value.get("status") != "completed":
            return result
        from scv.structured import check_reply, repair_prompt
        limit = ctx.config.tools.output_limit_bytes
        verdict = check_reply(call.schema, str(result.value.get("reply", "")), limit)
        handle = result.value.get("session")
        if not verdict.ok and handle is not None and conversations.knows(handle):
            # One repair turn, the next of the same conversation; its limit or failure is the result.
            repair = dataclasses.replace(call, prompt=repair_prompt(verdict), conversation=conversations.get(handle))
            result = self._turn(repair, repair.conversation, ctx, launch)
            if result.value.get("status") != "completed":
                return result
            verdict = check_reply(call.schema, str(result.value.get("reply", "")), limit)
        if verdict.ok:
            return Result(ok=True, value={**result.value, "structured": verdict.document})
        return Result(ok=False, value={**result.value, "status": "schema_invalid", "errors": list(verdict.errors)})

    def _turn(self, call: AgentCall, conversation: Conversation | None, ctx: ToolContext, launch: Launch) -> Result:
        conversations = self._agents().conversations
        if conversation is not None:
            conversations.begin_turn(conversation)
        previous_total = dict(conversation.usage_total) if conversation is not None else {}
        result = None
        try:
            result = call.backend.run(call, conversation, ctx, launch, scv_home())
        finally:
            private = result.private if result is not None else None
            if conversation is not None:
                # BUSY -> IDLE, or forgotten (a first turn that reported no session, a live worker gone).
                kept = conversations.end_turn(conversation, private.vendor_session if private else None,
                                              private.cwd if private else None)
                ended = private is not None and bool(private.conversation_ended)
                if kept and conversation.live is not None and (ended or not conversation.live.alive()):
                    conversations.forget(conversation.handle)
                    kept = False
        value = dict(result.value)
        status = value.setdefault("status", "completed" if result.ok else "failed")
        value.setdefault("agent", call.name)
        if conversation is not None and kept:
            value["session"] = conversation.handle
            value["turn"] = conversation.turns
            self._turn_usage(conversation, previous_total, value)
        if ctx.budget is not None and isinstance(value.get("usage"), dict):
            ctx.budget.spend(msgspec.convert(value["usage"], Usage), call.model or self._model_of(call, ctx))
        offered = self._agents().offered
        if status == "failed" and private is not None and private.available is False:
            others = [other for other in offered if other != call.name]
            if others:
                value["fallback"] = ("This agent could not run: it is missing, signed out, or its provider returned "
                                     f"an error. Other agents are available: {', '.join(others)}. Call agent again "
                                     "with one of them.")
        if status == "declined":
            value["note"] = self._declined_note(call.name, offered)
        return Result(ok=result.ok, value=value)

    @staticmethod
    def _model_of(call: AgentCall, ctx: ToolContext) -> str | None:
        settings = ctx.config.agents.get(call.name)
        return settings.model if settings is not None else None

    @staticmethod
    def _turn_usage(conversation: Conversation, previous: dict[str, Any], value: dict[str, Any]) -> None:
        """Codex reports the running token totals of the whole thread after `exec resume`, and a
        resumed Claude session's total_cost_usd covers the whole session: keep the totals, and show
        this turn's share."""
        usage = value.get("usage")
        if conversation.agent not in _RUNNING_TOTALS or not isinstance(usage, dict):
            return
        # Only these are running totals; turns are counted per turn from the stream.
        keys = _RUNNING_TOTALS[conversation.agent]
        totals = {k: usage[k] for k in keys if isinstance(usage.get(k), (int, float)) and usage[k] is not True}
        conversation.usage_total = totals
        if previous and all(totals.get(k, 0) >= v for k, v in previous.items()):
            value["usage"] = {**usage, **{k: round(v - previous.get(k, 0), 9) if isinstance(v, float)
                                          else v - previous.get(k, 0) for k, v in totals.items()}}

    @staticmethod
    def _declined_note(name: str | None, offered: dict[str, OfferedAgent]) -> str:
        if "grok" in offered and name != "grok":
            return ("The agent declined this request. Tell the user what it said, then call agent again with agent "
                    "\"grok\" and the same request; a safety or guardrail refusal is not a reason to skip Grok.")
        return ("The agent declined this request. Tell the user what it said; do not pass the request to another "
                "agent on your own. If the user then asks for a specific agent, call that one.")

    # --- what the model sees -----------------------------------------------------------------

    def schema(self, ctx: ToolContext) -> dict[str, Any]:
        schema = super().schema(ctx)
        agents = self._agents().offered
        props = schema["properties"]
        props["agent"] = {"type": "string", "enum": list(agents),
                          "description": agent_argument(ctx.config, agents)}
        for option in ("model", "effort", "session"):
            if not any(o.takes(option) for o in agents.values()):
                props.pop(option, None)
        if "effort" in props:
            described = [c.get("description") for c in props["effort"].get("anyOf", [props["effort"]])]
            props["effort"] = {"type": "string", "enum": list(EFFORTS),
                               "description": next((d for d in described if d), "")}
        set_maximum(schema, "timeout_seconds", ctx.config.tools.max_timeout_seconds)
        if ctx.config.agent.max_background <= 0:
            props.pop("background", None)
        required = ["prompt"]
        if default_agent(ctx.config, list(agents)) is None:
            required.append("agent")
        schema["required"] = required
        return schema

    def system_prompt_section(self, ctx: ToolContext) -> str | None:
        offered = self._agents().offered
        return delegating_section(ctx.config, offered) if offered else None
