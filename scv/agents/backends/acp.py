"""The `acp` backend: the agent's ACP server (claude-agent-acp, codex-acp, grok agent stdio, dsh
--profile acp) kept for the whole conversation in one live worker (workers/live/acp.py). Its
permission requests come back through the calling session's approval gate."""

import os
from typing import Any

from scv.agents import live_plan
from scv.agents.backends.base import AgentCall
from scv.agents.backends.live import LiveBackend
from scv.agents.conversations import Conversation
from scv.agents.descriptors import ACP
from scv.tools.base import ToolContext


def directory(call: AgentCall, ctx: ToolContext) -> str:
    """Where the turn runs, as the person approving should read it."""
    if call.cwd:
        return os.path.realpath(os.path.join(ctx.workspace, call.cwd))
    if call.conversation is not None and call.conversation.cwd is not None:
        return call.conversation.cwd
    return str(ctx.workspace)


class LiveServerBackend(LiveBackend):
    """What the two live backends share: the server's command line, and the summary that shows it."""

    def summary(self, call: AgentCall, ctx: ToolContext) -> str:
        conversation = call.conversation.handle if call.conversation is not None else None
        return live_plan.summary(call.offered, prompt=call.prompt, directory=directory(call, ctx),
                                 timeout_seconds=call.timeout_seconds, full_permissions=call.full_permissions,
                                 conversation=conversation, model=call.model, effort=call.effort)

    def turn_args(self, call: AgentCall, conversation: Conversation, ctx: ToolContext, home) -> dict[str, Any]:
        return {**super().turn_args(call, conversation, ctx, home),
                "argv": live_plan.server_argv(call.offered, call.full_permissions)}


class AcpBackend(LiveServerBackend):
    transport = ACP
    executor = live_plan.FACTORIES[ACP]
