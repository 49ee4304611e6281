"""`chat_history`: this conversation's chat log, read-only (sessions whose bridge named the log).

Three actions, each bounded: `search` (every word, ignoring case, newest first, at most
SEARCH_BYTES of log a call), `episodes` (newest first, by start date) and `read` (an episode's
messages from `offset`). Episode IDs of any shape but the log's own are refused here.
"""

import re
from datetime import date
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from scv.core.chat.layout import episode_start
from scv.core.errors import RefusedError
from scv.tools.base import Risk, ToolContext, ToolSpec, short

SEARCH_BYTES = 64 * 1024 * 1024
DEFAULT_LIMITS = {"search": 10, "episodes": 20, "read": 30}
MAX_LIMIT = 100
MAX_WORDS = 32
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# The arguments each action takes (beside action and limit).
TAKES = {"search": {"query"}, "episodes": {"before", "after"}, "read": {"episode", "offset"}}


class ChatHistoryArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    action: Annotated[Literal["search", "episodes", "read"], Meta(description=(
        "search: messages holding every word of query; episodes: the list of episodes; read: an episode's "
        "messages."))]
    query: Annotated[str, Meta(max_length=1000, description="search: the words to find (all of them, any case).")] \
        | None = None
    episode: Annotated[str, Meta(max_length=64, description=(
        "read: an episode ID as search or episodes gave it, such as 2026/2026-09-21_2026-09-27/2026-09-26T14-04-05."
    ))] | None = None
    before: Annotated[str, Meta(description="episodes: only those started before this date (YYYY-MM-DD).")] \
        | None = None
    after: Annotated[str, Meta(description="episodes: only those started on or after this date (YYYY-MM-DD).")] \
        | None = None
    offset: Annotated[int, Meta(ge=0, description="read: the first message to show (default 0).")] | None = None
    limit: Annotated[int, Meta(ge=1, le=MAX_LIMIT, description=(
        "How many entries at most (defaults: search 10, episodes 20, read 30)."))] | None = None


def _date(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    try:
        if not _DATE.fullmatch(value):
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        raise RefusedError(f"chat_history {name} {value[:40]!r} is not a date; write it as YYYY-MM-DD") from None


class ChatHistoryTool(ToolSpec):
    name = "chat_history"
    description = ("Search and read this chat's earlier messages, one conversation's log: action search (every "
                   "word of query, newest first), episodes (newest first; before/after as YYYY-MM-DD) or read (an "
                   "episode's messages from offset, with total). Read-only.")
    Args = ChatHistoryArgs
    executor = "workers.chat_history:execute"
    declared_risk = Risk.READ_ONLY
    example = {"action": "search", "query": "blue door"}

    def check(self, args: ChatHistoryArgs, ctx: ToolContext) -> None:
        if ctx.channel is None or ctx.channel.log is None:
            raise RefusedError("chat_history is only offered in a chat session whose bridge named its log")
        given = {name for name in ("query", "episode", "before", "after", "offset") if getattr(args, name) is not None}
        extra = sorted(given - TAKES[args.action])
        if extra:
            takes = " and ".join(sorted(TAKES[args.action] | {"limit"}))
            raise RefusedError(f"chat_history {args.action} takes {takes}, not {', '.join(extra)}; remove "
                               f"{'it' if len(extra) == 1 else 'them'}")
        if args.action == "search":
            words = (args.query or "").split()
            if not words:
                raise RefusedError("chat_history search needs a query of one or more words")
            if len(words) > MAX_WORDS:
                raise RefusedError(f"chat_history search takes at most {MAX_WORDS} words; shorten the query")
        elif args.action == "episodes":
            before, after = _date(args.before, "before"), _date(args.after, "after")
            if before is not None and after is not None and after >= before:
                raise RefusedError("chat_history episodes: after must be a date earlier than before")
        elif args.episode is None:
            raise RefusedError("chat_history read needs an episode ID, from search or episodes")
        elif episode_start(args.episode) is None:
            raise RefusedError(f"chat_history episode {args.episode[:64]!r} is not an episode ID; give one as search "
                               "or episodes listed it, such as 2026/2026-09-21_2026-09-27/2026-09-26T14-04-05")

    def summary(self, args: ChatHistoryArgs, ctx: ToolContext) -> str:
        if args.action == "search":
            return short(f"search this chat's history for {args.query!r}")
        if args.action == "episodes":
            return "list this chat's episodes"
        return f"read episode {args.episode} of this chat from message {args.offset or 0}"

    def worker_args(self, args: ChatHistoryArgs, ctx: ToolContext) -> dict:
        channel = ctx.channel
        return {**msgspec.to_builtins(args), "limit": args.limit or DEFAULT_LIMITS[args.action],
                "offset": args.offset or 0, "log": channel.log, "media": channel.media, "byte_cap": SEARCH_BYTES,
                "output_limit": ctx.config.tools.output_limit_bytes}
