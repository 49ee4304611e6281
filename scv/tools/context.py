"""What a tool's spec may consult on the supervisor side: one session's workspace, configuration
and the few things it started with. Its own module so that a command that only loads a context
(`scv tools`) does not load the tool contract with it (scv/tools/base.py)."""

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from scv.config.load import Config

if TYPE_CHECKING:
    from scv.chat.channel import ChatChannel
    from scv.core.limits import Budget
    from scv.skills.index import SkillIndex


class ToolContext(msgspec.Struct, frozen=True):
    """A Struct: far cheaper to define at start-up than a dataclass."""

    workspace: Path
    config: Config
    # Delegation depth of this session (0 for a session a person or script started).
    delegation_depth: int = 0
    # The skills discovered when the session started (None: skills are off or not looked for).
    skills: "SkillIndex | None" = None
    # The chat conversation a chat bridge's session serves (None: not a chat session).
    channel: "ChatChannel | None" = None
    # The run's limits and usage ledger (scv/core/limits.py), shared by its turns, calls and jobs.
    budget: "Budget | None" = None
