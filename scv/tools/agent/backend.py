"""What an agent backend is: the approval summary of a turn, and running it.

`resume` (cli.py) starts the agent's CLI once per turn in a fresh worker. A live backend keeps
one worker (and the agent process in it) for the whole conversation: the conversation owns that
worker (`conversation.live`), the backend starts it on the first turn and sends every later
turn to it (live.py). Both return the worker's `Result`, whose private part (`AgentPrivate`)
tells the tool the agent's own session id, the directory and whether the agent could run.
"""

import abc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from scv.agents.conversations import Conversation
from scv.agents.offered import OfferedAgent
from scv.core.limits import Limits, call_fields
from scv.core.messages import Result
from scv.core.usage import Price
from scv.sandbox.choose import plan_for
from scv.tools.base import Launch, ToolContext


@dataclass(frozen=True)
class AgentCall:
    """One `agent` call, planned once before approval; every later hook receives it."""

    offered: OfferedAgent
    backend: "AgentBackend"
    conversation: Conversation | None   # the conversation a `session` handle names
    prompt: str
    model: str | None
    effort: str | None
    cwd: str | None                     # as the model gave it, checked to stay in the workspace
    full_permissions: bool
    timeout_seconds: float
    background: bool
    session_id: str                     # this SCV session's id in SCV_PARENT
    schema: dict[str, Any] | None = None  # the `schema` argument: the reply must validate (issue 21)
    allowance: Limits = Limits()        # the agent's own limits and the run's budget left, the smaller
    price: Price | None = None          # [prices] of the model, for an agent that reports no cost

    @property
    def name(self) -> str:
        return self.offered.descriptor.name


class AgentBackend(abc.ABC):
    transport: ClassVar[str]

    def keeps_conversations(self, call: AgentCall) -> bool:
        """Whether a turn on this backend can be continued (its result carries a `session`)."""
        return True

    def check(self, call: AgentCall) -> None:
        """Refuses (RefusedError) a call this backend cannot run, before anyone is asked about it."""

    @abc.abstractmethod
    def summary(self, call: AgentCall, ctx: ToolContext) -> str:
        """What the person approving the call is shown: what runs, where, for how long."""

    @abc.abstractmethod
    def run(self, call: AgentCall, conversation: Conversation | None, ctx: ToolContext, launch: Launch,
            home: Path) -> Result:
        """Runs one turn (`conversation` is None when the agent keeps none) and returns its result."""


def turn_directory(call: AgentCall, ctx: ToolContext) -> str:
    """Where the turn runs, as the person approving reads it: the call's cwd, else the
    conversation's, else the workspace."""
    if call.cwd:
        return os.path.realpath(os.path.join(ctx.workspace, call.cwd))
    if call.conversation is not None and call.conversation.cwd is not None:
        return call.conversation.cwd
    return str(ctx.workspace)


def turn_fields(call: AgentCall, conversation: Conversation | None, ctx: ToolContext,
                delegation: str) -> dict[str, Any]:
    """What every backend's worker needs to run and record a turn of a delegated agent."""
    # The sandbox is planned right before the turn runs, and per agent: its own table may set it.
    sandbox = plan_for(ctx.config, ctx.workspace, call.name)
    return {
        "sandbox": msgspec.to_builtins(sandbox),
        "agent": call.name,
        "cwd": call.cwd or (conversation.cwd if conversation is not None else None),
        "full_permissions": call.full_permissions,
        "session_id": call.session_id,
        "delegation": delegation,
        "depth": ctx.delegation_depth + 1,
        "conversation": conversation.handle if conversation is not None else None,
        "turn": conversation.turns + 1 if conversation is not None else None,
        **call_fields(call.allowance, call.price),
    }
