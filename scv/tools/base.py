"""The tool extension contract.

A tool is a `ToolSpec`: a unique name, a description, an `Args` msgspec Struct that both
validates the model's arguments and generates the JSON Schema, a declared risk, an approval
summary, and the executor (a "module:function" in `workers/`) that runs in the worker.

One call goes through the spec's hooks in this order, each receiving the one per-call object
that `prepare` returned (the Args themselves for most tools; the `agent` tool's plan):

    parse (JSON -> Args -> prepare) -> risk, summary -> [approval] -> background? -> run -> complete

`prepare` holds the validation types cannot express; it runs before approval, so a refused call
is never put to a person and never forks a worker. A spec is built once per session with that
session's collaborators (`Services`: its delegated agents and background jobs), so no hook
keeps hidden state between calls.
"""

import abc
import re
from typing import Any, Callable, ClassVar, Generic, Protocol, TypeVar

import msgspec

from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from scv.core.messages import Call, Result
from scv.core.risk import Risk
from scv.telemetry.spans import Span
from scv.tools.context import ToolContext
from scv.tools.offering import offered, session_facts
from scv.tools.services import Services

P = TypeVar("P")

class Launch(Protocol):
    """How a spec's `run` reaches workers for one approved call (scv/session/calls.py implements it)."""

    cancel: Cancellation | None     # the turn's own cancellation
    span: Span                      # the call's span: its workers' processes are children of it

    def message(self, executor: str, args: dict[str, Any], *, handle: str | None = None) -> Call:
        """The call's message to a worker: its timeout, limits, options and tag filled in."""

    def fresh(self, message: Call, cancel: Any = None) -> Result:
        """Runs the message in a fresh worker used once (`cancel`: instead of the turn's)."""

    def live(self, worker: Any, message: Call, cancel: Any = None) -> Result:
        """Runs the message as one call of a live worker (scv/supervision/live_worker.py)."""

    def start_live(self) -> Any:
        """A new live worker for a conversation, owned by the caller."""

    def under(self, span: Span) -> "Launch":
        """This launch with its workers under `span` instead (a child of the call's span)."""


class BackgroundCall(msgspec.Struct, Generic[P], frozen=True):
    """A call to run as a background job: the same call in the foreground of the job's own
    runner, and what the job is (its agent and the conversation it continues)."""

    foreground: P
    agent: str
    conversation: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    release: Callable[[], None] | None = None     # undoes what `background` held when the job cannot start


_AT = r" - at `\$\.?(?P<at>[^`]*)`$"


def explain_validation(tool: str, exc: Exception) -> str:
    text = str(exc)
    match = re.search(_AT, text)
    where = match.group("at") if match else ""
    message = text[: match.start()] if match else text
    unknown = re.match(r"Object contains unknown field `([^`]+)`", message)
    if unknown:
        return f"{tool} has no argument {unknown.group(1)!r}; remove it (see `scv tools` for the schema)"
    missing = re.match(r"Object missing required field `([^`]+)`", message)
    if missing:
        field = ".".join(filter(None, [where, missing.group(1)]))
        return f"{tool} needs the argument {field!r}; add it"
    message = message[0].lower() + message[1:] if message else "invalid"
    if where:
        return f"{tool} argument {where!r} is invalid: {message}"
    return f"{tool} arguments are invalid: {message}"


class ToolSpec(abc.ABC, Generic[P]):
    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[msgspec.Struct]]
    executor: ClassVar[str]
    declared_risk: ClassVar[Risk]
    # Valid arguments for a typical call, as in the spec; the conformance test runs every tool's.
    example: ClassVar[dict[str, Any]]
    # What a call's checks import that the spec itself leaves out: a session loads them once its
    # first model request is on its way, so neither that request nor the first call waits for them.
    call_modules: ClassVar[tuple[str, ...]] = ()

    def __init__(self, services: Services | None = None):
        self.services = services or Services()

    # --- validation ---------------------------------------------------------------------------

    def parse(self, raw: str | bytes | dict[str, Any], ctx: ToolContext) -> P:
        """JSON text or an already-decoded object -> Args -> the per-call object. Raises RefusedError."""
        try:
            if isinstance(raw, (str, bytes)):
                args = msgspec.json.decode(raw or b"{}", type=self.Args)
            else:
                args = msgspec.convert(raw, self.Args)
        except msgspec.ValidationError as exc:
            raise RefusedError(explain_validation(self.name, exc)) from None
        except msgspec.DecodeError as exc:
            raise RefusedError(f"{self.name} arguments are not valid JSON ({exc}); pass one JSON object") from None
        return self.prepare(args, ctx)

    def prepare(self, args: msgspec.Struct, ctx: ToolContext) -> P:
        """Checks beyond the types, then the one object every later hook of this call receives;
        by default the Args themselves, after `check`."""
        self.check(args, ctx)
        return args   # type: ignore[return-value]

    def check(self, args: msgspec.Struct, ctx: ToolContext) -> None:
        """Checks beyond the types; raise RefusedError with one sentence."""

    # --- what the supervisor needs ------------------------------------------------------------

    def enabled(self, ctx: ToolContext) -> bool:
        """Offered in this session: what the catalog says the tool needs (scv/tools/offering.py)."""
        return offered(self.name, session_facts(ctx, self.services))

    def risk(self, call: P, ctx: ToolContext) -> Risk:
        """This call's risk, decided before approval; a tool may raise it above `declared_risk`."""
        return self.declared_risk

    @abc.abstractmethod
    def summary(self, call: P, ctx: ToolContext) -> str:
        """One line shown to the person asked to approve the call."""

    def timeout_seconds(self, call: P, ctx: ToolContext) -> float:
        return float(ctx.config.tools.command_timeout_seconds)

    def options(self, ctx: ToolContext) -> dict[str, Any]:
        """Settings from the configuration that the executor needs."""
        return {}

    def worker_args(self, call: P, ctx: ToolContext) -> dict[str, Any]:
        return msgspec.to_builtins(call)

    def background(self, call: P, ctx: ToolContext) -> BackgroundCall[P] | None:
        """The call as a background job (the runner starts it and returns the job's handle at
        once), or None (the default) to run it now."""
        return None

    def run(self, call: P, ctx: ToolContext, launch: Launch) -> Result:
        """Runs an approved call; by default the executor in a fresh worker used once."""
        return launch.fresh(launch.message(self.executor, self.worker_args(call, ctx)))

    def complete(self, call: P, result: Result, ctx: ToolContext) -> dict[str, Any]:
        """Supervisor-side last word on a result before anyone sees it (for example, to record
        state a worker reported). Runs for every finished call; returns the value shown."""
        return result.value

    def system_prompt_section(self, ctx: ToolContext) -> str | None:
        """A section this tool adds to the session's system prompt (for example, the agents
        it offers), or None. Gathered once when a session starts, for the tools it offers."""
        return None

    def schema(self, ctx: ToolContext) -> dict[str, Any]:
        """The JSON Schema of the arguments, generated from `Args`."""
        generated = msgspec.json.schema(self.Args)
        defs = generated.pop("$defs", {})
        ref = generated.get("$ref", "")
        body = dict(defs.pop(ref.rsplit("/", 1)[-1], generated))
        body.pop("title", None)
        body.pop("description", None)
        body["additionalProperties"] = False
        if defs:
            body["$defs"] = defs
        return body

    def describe(self, ctx: ToolContext) -> dict[str, Any]:
        return {"name": self.name, "risk": self.declared_risk.value, "description": self.description,
                "schema": self.schema(ctx)}


def set_maximum(schema: dict[str, Any], field: str, maximum: int) -> None:
    """Writes a ceiling that comes from configuration into the integer choice of `field`
    (an optional field's schema is an anyOf of integer and null)."""
    prop = schema["properties"][field]
    for choice in prop.get("anyOf", [prop]):
        if choice.get("type") == "integer":
            choice["maximum"] = maximum


def short(text: str, limit: int = 400) -> str:
    """A bounded, single-line rendering of a value for approval summaries."""
    if "\n" in text or "\r" in text:
        import json     # only for a summary that has line breaks to escape
        text = json.dumps(text)[1:-1]
    flat = text
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
