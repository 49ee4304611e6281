"""A session's delegation state: the agents it offers (decided once, when the session starts),
its conversations, and its id in SCV_PARENT. The session that opens it closes it."""

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from scv.agents.offered import OfferedAgent, discover
from scv.agents.transport import LIVE_BACKENDS
from scv.config.load import Config

if TYPE_CHECKING:
    from scv.agents.conversations import Conversations
    from scv.agents.idle_reaper import IdleReaper


class AgentSession(msgspec.Struct):
    offered: dict[str, OfferedAgent]
    # Makes the conversation table when a call first asks for it: a session that offers no agent
    # never loads it before its first model request.
    new_conversations: Callable[[], "Conversations"]
    # os.urandom rather than secrets: the same bytes, without loading hashlib at start-up.
    session_id: str = msgspec.field(default_factory=lambda: f"s-{os.urandom(4).hex()}")
    # Which backend runs an offered agent (None: its CLI once per turn); tests put a fake here.
    choose_backend: Callable[[OfferedAgent], Any] | None = None
    reaper: "IdleReaper | None" = None     # when a live agent is offered: its idle servers stop on time
    made: "Conversations | None" = None
    closed: bool = False
    lock: Any = msgspec.field(default_factory=threading.Lock)

    @property
    def conversations(self) -> "Conversations":
        with self.lock:
            if self.made is None:
                self.made = self.new_conversations()
                if self.closed:         # asked for after the session ended: it holds nothing and takes nothing
                    self.made.close()
            return self.made

    def close(self) -> None:
        """Handles end with the SCV session, and so do their live workers."""
        if self.reaper is not None:
            self.reaper.close()
        with self.lock:
            self.closed = True
            made = self.made
        if made is not None:
            made.close()


def open_agent_session(config: Config, home: Path, environ: dict[str, str] | None = None) -> AgentSession:
    settings = config.agent
    offered = discover(environ, home=home, settings=config.agents)

    def new_conversations() -> "Conversations":
        from scv.agents.conversations import Conversations
        return Conversations(settings.max_conversations, settings.conversation_idle_seconds,
                             home / "state" / "conversations")

    session = AgentSession(offered=offered, new_conversations=new_conversations)
    if any(agent.transport in LIVE_BACKENDS for agent in offered.values()):
        from scv.agents.idle_reaper import IdleReaper
        session.reaper = IdleReaper(session.conversations)
    return session
