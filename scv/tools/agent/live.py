"""Live backends: one worker serves every turn of a conversation (an ACP server or a nested SCV
runs inside it for as long as the conversation lives). The first turn starts the worker, which
the conversation then owns; a later turn whose worker has gone (its agent exited between turns,
or `scv agents kill` stopped it) fails with "its server exited" and the conversation ends, so the
next call starts a new one cleanly.
"""

import os
from pathlib import Path
from typing import Any, ClassVar

from scv.agents.conversations import Conversation
from scv.core.errors import WorkerLost
from scv.core.messages import AgentPrivate, Result
from scv.tools.agent import live_plan
from scv.tools.agent.backend import AgentBackend, AgentCall, turn_directory, turn_fields
from scv.tools.base import Launch, ToolContext


def server_exited(call: AgentCall, conversation: Conversation) -> Result:
    value = {"agent": call.name, "status": "failed", "reply": "", "usage": None, "exit_code": None,
             "stderr_tail": "", "truncated": False,
             "error": f"conversation {conversation.handle} cannot continue: its server exited; omit session to "
                      "start a new conversation"}
    return Result(ok=False, value=value, private=AgentPrivate(available=False))


class LiveBackend(AgentBackend):
    transport: ClassVar[str]
    executor: ClassVar[str]         # the factory of the worker-side live agent ("module:function")

    def summary(self, call: AgentCall, ctx: ToolContext) -> str:
        conversation = call.conversation.handle if call.conversation is not None else None
        return live_plan.summary(call.offered, prompt=call.prompt, directory=turn_directory(call, ctx),
                                 timeout_seconds=call.timeout_seconds, full_permissions=call.full_permissions,
                                 conversation=conversation, model=call.model, effort=call.effort)

    def turn_args(self, call: AgentCall, conversation: Conversation, ctx: ToolContext, home: Path) -> dict[str, Any]:
        """What the live agent gets for one turn (the factory gets the first turn's too)."""
        return {**turn_fields(call, conversation, ctx, f"{call.name}-{os.urandom(3).hex()}"),
                "argv": live_plan.server_argv(call.offered, call.full_permissions),
                "prompt": call.prompt, "model": call.model, "effort": call.effort, "scv_home": str(home)}

    def run(self, call: AgentCall, conversation: Conversation | None, ctx: ToolContext, launch: Launch,
            home: Path) -> Result:
        assert conversation is not None, "a live backend always keeps its conversation"
        if conversation.live is None:
            if conversation.turns:
                return server_exited(call, conversation)
            conversation.live = launch.start_live()
        message = launch.message(self.executor, self.turn_args(call, conversation, ctx, home),
                                 handle=conversation.live.handle)
        try:
            result = launch.live(conversation.live, message)
        except WorkerLost:
            return server_exited(call, conversation)
        if result.private is None and conversation.turns and not conversation.live.alive():
            # No answer of the live agent's: its worker ended as the call reached it (the server had
            # exited between turns, and the worker with it).
            return server_exited(call, conversation)
        return result
