"""Per-session delegation state, kept in `ctx.session_state["agent"]`: the agents offered (decided
once, when the session first asks), the session's conversations and its id in SCV_PARENT."""

import secrets
from dataclasses import dataclass, field
from typing import Any

from scv.agents.conversations import Conversation, Conversations
from scv.agents.offered import OfferedAgent, discover
from scv.config import scv_home
from scv.tools.base import ToolContext

STATE_KEY = "agent"


@dataclass
class AgentSession:
    offered: dict[str, OfferedAgent]
    conversations: Conversations
    session_id: str = field(default_factory=lambda: f"s-{secrets.token_hex(4)}")
    # Calls between worker_args() and complete(), by id of their Args: the conversation each runs.
    running: dict[int, Conversation | None] = field(default_factory=dict)
    closes_with_session: bool = False


def _close_with_the_session(ctx: ToolContext, state: AgentSession) -> None:
    """Handles end with the SCV session. The session registers itself in `session_state` only
    after building its registry (which already asks for this state), so this is retried on each use."""
    session: Any = ctx.session_state.get("scv.session")
    if session is not None and not state.closes_with_session:
        state.closes_with_session = True
        session.add_close_hook(state.conversations.close)


def agent_session(ctx: ToolContext) -> AgentSession:
    state: Any = ctx.session_state.get(STATE_KEY)
    if state is None:
        home = scv_home()
        settings = ctx.config.agent
        state = AgentSession(offered=discover(home=home, settings=ctx.config.agents),
                             conversations=Conversations(settings.max_conversations,
                                                         settings.conversation_idle_seconds,
                                                         home / "state" / "conversations"))
        ctx.session_state[STATE_KEY] = state
    _close_with_the_session(ctx, state)
    return state
