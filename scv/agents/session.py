"""A session's delegation state: the agents it offers (decided once, when the session starts),
its conversations, and its id in SCV_PARENT. The session that opens it closes it."""

import os
from pathlib import Path
from typing import Any, Callable

import msgspec

from scv.agents.conversations import Conversations
from scv.agents.idle_reaper import IdleReaper
from scv.agents.offered import OfferedAgent, discover
from scv.agents.transport import LIVE_BACKENDS
from scv.config.load import Config


class AgentSession(msgspec.Struct):
    offered: dict[str, OfferedAgent]
    conversations: Conversations
    # os.urandom rather than secrets: the same bytes, without loading hashlib at start-up.
    session_id: str = msgspec.field(default_factory=lambda: f"s-{os.urandom(4).hex()}")
    # Which backend runs an offered agent (None: its CLI once per turn); tests put a fake here.
    choose_backend: Callable[[OfferedAgent], Any] | None = None
    reaper: IdleReaper | None = None    # when a live agent is offered: its idle servers stop on time

    def close(self) -> None:
        """Handles end with the SCV session, and so do their live workers."""
        if self.reaper is not None:
            self.reaper.close()
        self.conversations.close()


def open_agent_session(config: Config, home: Path, environ: dict[str, str] | None = None) -> AgentSession:
    settings = config.agent
    offered = discover(environ, home=home, settings=config.agents)
    conversations = Conversations(settings.max_conversations, settings.conversation_idle_seconds,
                                  home / "state" / "conversations")
    live = any(agent.transport in LIVE_BACKENDS for agent in offered.values())
    return AgentSession(offered=offered, conversations=conversations,
                        reaper=IdleReaper(conversations) if live else None)
