"""A backend that runs no process, for tests of what the agent tool does around a turn: which
conversation a turn continues, when one is kept or forgotten, the fallback offered when an agent
could not run. Each turn answers with the next of its scripted turns; a session puts it in place
through `AgentSession.choose_backend`."""

from dataclasses import dataclass, field
from pathlib import Path

from scv.agents.conversations import Conversation
from scv.core.messages import AgentPrivate, Result
from scv.tools.agent.backend import AgentBackend, AgentCall
from scv.tools.base import Launch, ToolContext


@dataclass(frozen=True)
class FakeTurn:
    reply: str = "done"
    status: str = "completed"
    vendor_session: str | None = "fake-session-1"     # None: the agent reported no session of its own
    available: bool | None = None                      # False: the agent could not run at all
    conversation_ended: bool | None = None


@dataclass(frozen=True)
class SeenTurn:
    prompt: str
    conversation: str | None        # the SCV handle the turn ran in
    vendor_session: str | None      # the agent's own session the turn continued


@dataclass
class FakeBackend(AgentBackend):
    turns: list[FakeTurn]
    seen: list[SeenTurn] = field(default_factory=list)
    transport = "fake"

    def summary(self, call: AgentCall, ctx: ToolContext) -> str:
        return f"agent {call.name} (a fake backend, nothing runs): {call.prompt}"

    def run(self, call: AgentCall, conversation: Conversation | None, ctx: ToolContext, launch: Launch,
            home: Path) -> Result:
        self.seen.append(SeenTurn(call.prompt, conversation.handle if conversation else None,
                                  conversation.vendor_id if conversation else None))
        turn = self.turns.pop(0)
        value = {"agent": call.name, "status": turn.status, "reply": turn.reply, "usage": None}
        private = AgentPrivate(vendor_session=turn.vendor_session, cwd=str(ctx.workspace), available=turn.available,
                               conversation_ended=turn.conversation_ended)
        return Result(ok=turn.status == "completed", value=value, private=private)
