"""`agent`: hands work to a delegated coding agent (Claude Code, Codex, Grok Build, DeepSeek
Harness, pi) and returns one structured result, whatever the CLI printed.

This spec chooses the agent (session handle, then `agent`, then the user's `[agent] prefer`),
checks the call against what that agent takes before any approval, builds the exact argument
vector the approval shows, and keeps conversations: the worker reports the CLI's own session id
in a private field that `complete()` records and removes. The backend today is the agent's CLI,
once per turn (`workers/agent.py`); the model sees this one schema whichever backend runs.
"""

import contextlib
import json
import os
import secrets
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from scv.agents.conversations import Conversation
from scv.agents.describe import agent_argument, default_agent, delegating_section
from scv.agents.offered import OfferedAgent
from scv.agents.options import EFFORTS, blank_to_none, check_effort, check_model, check_prompt
from scv.agents.session import agent_session
from scv.config import scv_home
from scv.errors import RefusedError
from scv.sandbox.choose import plan_for, request_for
from scv.sandbox.policy import label
from scv.tools.base import Risk, ToolContext, ToolSpec, set_maximum, short
from scv.agents.descriptors import build_argv, agent_home

PRIVATE_PREFIX = "_"


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
    background: Annotated[bool, Meta(description=(
        "Run as a background job: the call returns a job handle at once and the result is reported when it "
        "finishes (agent_wait, agent_status and agent_cancel manage jobs)."))] = False


@dataclass(frozen=True)
class Plan:
    offered: OfferedAgent
    conversation: Conversation | None
    prompt: str
    model: str | None
    effort: str | None
    cwd: str | None
    full_permissions: bool

    @property
    def name(self) -> str:
        return self.offered.descriptor.name


def _takers(offered: dict[str, OfferedAgent], option: str) -> str:
    names = [name for name, o in offered.items() if getattr(o.descriptor, f"takes_{option}")]
    return ", ".join(names) if names else "none on offer"


class AgentTool(ToolSpec):
    name = "agent"
    description = ("Hand a task to another coding agent (a delegated CLI such as Claude Code or Codex) and get one "
                   "result: agent, status (completed, failed, declined, timeout, cancelled), reply, usage, "
                   "exit_code, stderr_tail, truncated, plus error, hint, note, fallback, session and turn when "
                   "they apply. The agent works on its own with its own credentials.")
    Args = AgentArgs
    example = {"agent": "codex", "prompt": "Land the fix with the feature-flow skill.", "cwd": "scv",
               "model": "gpt-5.5", "effort": "high", "timeout_seconds": 7200}
    executor = "workers.agent:execute"
    declared_risk = Risk.DELEGATE

    # --- which agent, and is the call acceptable --------------------------------------------

    def enabled(self, ctx: ToolContext) -> bool:
        if ctx.delegation_depth >= ctx.config.agent.max_delegation_depth:
            return False
        return bool(agent_session(ctx).offered)

    def plan(self, args: AgentArgs, ctx: ToolContext) -> Plan:
        state = agent_session(ctx)
        offered = state.offered
        choices = ", ".join(offered) or "none"
        requested = blank_to_none(args.agent)
        handle = blank_to_none(args.session)
        conversation = None
        if handle is not None:
            # The handle decides first; an agent that cannot take one explains an unknown handle better.
            if (not state.conversations.knows(handle) and requested in offered
                    and not offered[requested].descriptor.takes_session):
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
        descriptor = chosen.descriptor
        model, effort, cwd = blank_to_none(args.model), blank_to_none(args.effort), blank_to_none(args.cwd)
        for option, value in (("model", model), ("effort", effort), ("session", handle)):
            if value is not None and not getattr(descriptor, f"takes_{option}"):
                raise RefusedError(f"{name} does not take {option}; these agents do: {_takers(offered, option)}. "
                                   f"Omit {option}, or call one of them")
        check_prompt(args.prompt)
        if model is not None:
            check_model(model)
        if effort is not None:
            check_effort(effort)
        if cwd is not None:
            self._check_cwd(cwd, ctx)
        if conversation is not None:
            if conversation.busy:
                raise RefusedError(f"session busy: conversation {handle} is running a turn; wait for its result, "
                                   "or omit session to start a new conversation")
            if conversation.cwd is not None and cwd is not None:
                wanted = os.path.realpath(os.path.join(ctx.workspace, cwd))
                if wanted != conversation.cwd:
                    raise RefusedError(f"conversation {handle} runs in {conversation.cwd}, not {wanted}; omit cwd to "
                                       "continue it there, or omit session to start a new conversation there")
        ceiling = ctx.config.tools.max_timeout_seconds
        if args.timeout_seconds is not None and args.timeout_seconds > ceiling:
            raise RefusedError(f"agent timeout_seconds {args.timeout_seconds} is over the ceiling of {ceiling} "
                               "seconds (tools.max_timeout_seconds); ask for at most that")
        settings = ctx.config.agents.get(name)
        full = settings is not None and settings.permissions == "full"
        return Plan(chosen, conversation, args.prompt, model, effort, cwd, full)

    @staticmethod
    def _check_cwd(cwd: str, ctx: ToolContext) -> None:
        if "\x00" in cwd:
            raise RefusedError("agent cwd contains a NUL byte; remove it")
        root = str(ctx.workspace)
        joined = os.path.normpath(os.path.join(root, cwd))
        if joined != root and not joined.startswith(root.rstrip(os.sep) + os.sep):
            raise RefusedError(f"agent cwd {cwd!r} is outside the workspace; pass a directory inside it")

    def check(self, args: AgentArgs, ctx: ToolContext) -> None:
        plan = self.plan(args, ctx)
        request_for(ctx.config, ctx.workspace, plan.name)     # refuses a sandbox this kernel cannot give
        if args.background:
            from scv.jobs.manager import jobs_of     # late: jobs import the call path
            jobs_of(ctx).check_can_start()

    # --- what the person approving sees ------------------------------------------------------

    def risk(self, args: AgentArgs, ctx: ToolContext) -> Risk:
        return Risk.DELEGATE

    def timeout_seconds(self, args: AgentArgs, ctx: ToolContext) -> float:
        return float(args.timeout_seconds or ctx.config.tools.agent_timeout_seconds)

    def _argv(self, plan: Plan, *, new_session: str | None, resume: str | None, outfile: str) -> list[str]:
        return build_argv(plan.offered.descriptor, plan.offered.executable, plan.prompt, model=plan.model,
                          effort=plan.effort, full_permissions=plan.full_permissions, new_session=new_session,
                          resume=resume, outfile=outfile)

    def summary(self, args: AgentArgs, ctx: ToolContext) -> str:
        plan = self.plan(args, ctx)
        conversation = plan.conversation
        resume = f"<session of {conversation.handle}>" if conversation is not None else None
        argv = self._argv(plan, new_session="<new session id>", resume=resume, outfile="<private tmp file>")
        shown = [short(arg, 300) for arg in argv[1:]]
        directory = os.path.realpath(os.path.join(ctx.workspace, plan.cwd)) if plan.cwd else str(ctx.workspace)
        text = (f"agent {plan.name}: Launch {argv[0]} with args {json.dumps(shown, ensure_ascii=False)} in "
                f"{directory} (timeout {int(self.timeout_seconds(args, ctx))} s). Delegate risk: the agent reads, "
                "writes and runs commands on its own, may use the credentials it can reach, and calls its own "
                "model provider.")
        if plan.full_permissions:
            text += f" FULL PERMISSIONS: {plan.name} runs with its own approvals and sandbox switched off."
        request = request_for(ctx.config, ctx.workspace, plan.name)
        if request is not None:
            text += f" In SCV's {label(request)}, with its own home writable."
        return text

    # --- the run -----------------------------------------------------------------------------

    def start_detached(self, args: AgentArgs, ctx: ToolContext, runner: Any) -> dict[str, Any] | None:
        if not args.background:
            return None
        from scv.jobs.manager import jobs_of
        plan = self.plan(args, ctx)
        conversation = plan.conversation.handle if plan.conversation is not None else None
        job = jobs_of(ctx).start(self, args, runner, plan.name, conversation)
        return {"job": job.id, "agent": plan.name, "status": "running", "background": True}

    def options(self, ctx: ToolContext) -> dict[str, Any]:
        return {"scv_home": str(scv_home())}

    def worker_args(self, args: AgentArgs, ctx: ToolContext) -> dict[str, Any]:
        plan = self.plan(args, ctx)
        state = agent_session(ctx)
        descriptor = plan.offered.descriptor
        conversation, new_session, resume = plan.conversation, None, None
        if conversation is None and descriptor.takes_session:
            conversation = state.conversations.start(plan.name)
            if not descriptor.session_from_cli:
                conversation.new_vendor_id = new_session = str(uuid.uuid4())
        elif conversation is not None:
            resume = conversation.vendor_id
        if conversation is not None:
            state.conversations.begin_turn(conversation)
        state.running[id(args)] = conversation
        outfile = ""
        if "{outfile}" in descriptor.output_args:
            outfile = str(agent_home(scv_home(), plan.name) / "tmp" / secrets.token_hex(8) / "last-message.txt")
        return {
            "agent": plan.name,
            "argv": self._argv(plan, new_session=new_session, resume=resume, outfile=outfile),
            "cwd": plan.cwd or (conversation.cwd if conversation is not None else None),
            "outfile": outfile or None,
            "full_permissions": plan.full_permissions,
            "session_id": state.session_id,
            "delegation": f"{plan.name}-{secrets.token_hex(3)}",
            "depth": ctx.delegation_depth + 1,
            "conversation": conversation.handle if conversation is not None else None,
            "turn": conversation.turns + 1 if conversation is not None else None,
            # Chosen here, not in options(), because an agent's own table may set its sandbox.
            "sandbox": msgspec.to_builtins(plan_for(ctx.config, ctx.workspace, plan.name)),
        }

    @contextlib.contextmanager
    def listen(self, args: AgentArgs, ctx: ToolContext, cancel: Any):
        """A run that raises instead of returning a result (no `complete()`) still ends its turn,
        so its conversation is not left busy for good."""
        try:
            yield cancel
        except BaseException:
            state = agent_session(ctx)
            conversation = state.running.pop(id(args), None)
            if conversation is not None:
                # BUSY -> IDLE (a first turn that reported no session is forgotten)
                state.conversations.end_turn(conversation, None, None)
            raise

    def complete(self, args: AgentArgs, ok: bool, value: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        state = agent_session(ctx)
        conversation = state.running.pop(id(args), None)
        private = {key: value.pop(key) for key in [k for k in value if k.startswith(PRIVATE_PREFIX)]}
        status = value.setdefault("status", "completed" if ok else "failed")
        name = value.setdefault("agent", conversation.agent if conversation is not None else blank_to_none(args.agent))
        if conversation is not None:
            previous_total = dict(conversation.usage_total)
            kept = state.conversations.end_turn(conversation, private.get("_vendor_session"), private.get("_cwd"))
            if kept:
                value["session"] = conversation.handle
                value["turn"] = conversation.turns
                self._turn_usage(conversation, previous_total, value)
        if status == "failed" and private.get("_available") is False:
            others = [other for other in state.offered if other != name]
            if others:
                value["fallback"] = ("This agent could not run: it is missing, signed out, or its provider returned "
                                     f"an error. Other agents are available: {', '.join(others)}. Call agent again "
                                     "with one of them.")
        if status == "declined":
            value["note"] = self._declined_note(name, state.offered)
        return value

    @staticmethod
    def _turn_usage(conversation: Conversation, previous: dict[str, int], value: dict[str, Any]) -> None:
        """Codex reports the running total of the whole thread after `exec resume`: keep the total,
        and show this turn's share."""
        usage = value.get("usage")
        if conversation.agent != "codex" or not isinstance(usage, dict):
            return
        conversation.usage_total = dict(usage)
        if previous and all(usage.get(k, 0) >= v for k, v in previous.items()):
            value["usage"] = {k: v - previous.get(k, 0) for k, v in usage.items()}

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
        state = agent_session(ctx)
        offered = {name: o.descriptor for name, o in state.offered.items()}
        props = schema["properties"]
        props["agent"] = {"type": "string", "enum": list(offered),
                          "description": agent_argument(ctx.config, offered)}
        for option in ("model", "effort", "session"):
            if not any(getattr(d, f"takes_{option}") for d in offered.values()):
                props.pop(option, None)
        if "effort" in props:
            described = [c.get("description") for c in props["effort"].get("anyOf", [props["effort"]])]
            props["effort"] = {"type": "string", "enum": list(EFFORTS),
                               "description": next((d for d in described if d), "")}
        set_maximum(schema, "timeout_seconds", ctx.config.tools.max_timeout_seconds)
        if ctx.config.agent.max_background <= 0:
            props.pop("background", None)
        required = ["prompt"]
        if default_agent(ctx.config, list(offered)) is None:
            required.append("agent")
        schema["required"] = required
        return schema

    def system_prompt_section(self, ctx: ToolContext) -> str | None:
        offered = {name: o.descriptor for name, o in agent_session(ctx).offered.items()}
        return delegating_section(ctx.config, offered) if offered else None
