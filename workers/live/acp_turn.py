"""What one ACP turn keeps and shows: the reply (bounded), progress lines from `session/update`
notifications, and SCV's answer to the agent's permission requests.

Progress: completed lines of the agent's message text, each tool call's title (or its kind when it
has none), `<title> failed` for a failed tool call, and the current plan step. Thoughts and tool
output never become progress. The throttle redacts and bounds every line.

Permissions go through SCV's own approval gate with a risk that follows SCV's own tools, and are
answered by the kind of option the agent offers, never by its id.
"""

from pathlib import PurePosixPath
from typing import Callable

from scv.core.paths import is_secret_like
from workers.live.acp_wire import (MessageChunk, PermissionOption, PermissionParams, PlanUpdate, ToolCallProgress,
                                   ToolCallStart, Update)

MAX_SUMMARY_CHARS = 500
MAX_HELD_LINE = 4096        # of a line of text still arriving, what is kept to show

# The risk of a permission request, by its tool kind, in SCV's own terms.
_READING = ("read", "search", "think")
_FILES = ("edit", "delete", "move")


def risk_of(params: PermissionParams) -> str:
    kind = params.tool_call.kind if isinstance(params.tool_call.kind, str) else ""
    if kind in _READING:
        for location in params.tool_call.locations or ():
            if isinstance(location.path, str):
                parts = [p for p in PurePosixPath(location.path).parts if p not in ("/", "")]
                if is_secret_like(parts):
                    return "filesystem"
        return "read_only"
    if kind in _FILES:
        return "filesystem"
    if kind == "execute":
        return "process"
    if kind == "fetch":
        return "network"
    return "delegate"


def summary_of(handle: str, params: PermissionParams) -> str:
    """`[claude-1 acp] <title> (<kind>)`, one line, bounded."""
    call = params.tool_call
    kind = call.kind if isinstance(call.kind, str) and call.kind else "other"
    title = call.title if isinstance(call.title, str) and call.title.strip() else kind
    title = " ".join(title.split())
    if len(title) > MAX_SUMMARY_CHARS:
        title = title[: MAX_SUMMARY_CHARS - 1] + "…"
    return f"[{handle} acp] {title} ({kind})"


def choose_option(options: list[PermissionOption], approved: bool) -> str | None:
    """The option to select: allow_once (else allow_always) for an approval, reject_once (else
    reject_always) for a denial; None when the agent offers neither (the request is cancelled)."""
    wanted = ("allow_once", "allow_always") if approved else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if option.kind == kind:
                return option.option_id
    return None


class TurnState:
    """The reply and progress of one turn (of an ACP agent, or of a nested SCV)."""

    def __init__(self, limit_bytes: int, offer: Callable[[str], None]):
        self.limit_bytes = limit_bytes
        self._offer = offer
        self._parts: list[str] = []
        self._kept_bytes = 0
        self.cut = False
        self._line = ""
        self._titles: dict[str, str] = {}
        self._plan_step: str | None = None
        self.denied = 0             # permission requests SCV answered with a rejection
        self._pieces = 0            # pieces of text since the last response ended
        self.rounds = 0             # model responses that asked for tools (new toolCallIds)
        self._calls: set[str] = set()
        self._in_round = False

    # --- the reply ---

    def _keep(self, text: str) -> None:
        room = self.limit_bytes + 4 - self._kept_bytes
        if room <= 0:
            self.cut = True
            return
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > room:
            text = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
            size = room
            self.cut = True
        self._parts.append(text)
        self._kept_bytes += size

    def reply(self) -> str:
        return "".join(self._parts)

    def turns(self) -> int:
        """Model responses so far: each round of tool calls, and the final message."""
        return self.rounds + 1

    # --- updates ---

    def on_update(self, update: Update) -> None:
        if isinstance(update, MessageChunk):
            content = update.content
            if content is not None and isinstance(content.text, str) and content.text:
                self.on_text(content.text)
        elif isinstance(update, (ToolCallStart, ToolCallProgress)):
            self._tool(update)
        elif isinstance(update, PlanUpdate):
            self._plan(update)

    def on_text(self, text: str) -> None:
        """A piece of the agent's message text: kept for the reply, its completed lines shown."""
        self._keep(text)
        self._pieces += 1
        self._in_round = False
        self._text_lines(text)

    def end_text(self, whole: str | None = None) -> None:
        """One response of the agent ended (`whole` is its text, for agents that send no pieces)."""
        if self._pieces == 0 and whole:
            self._text_lines(whole)
        self._pieces = 0
        self.finish()

    def offer(self, line: str) -> None:
        self._offer(line)

    def _text_lines(self, text: str) -> None:
        if "\n" not in text:
            # The common piece: part of a line. A line this long only ever shows its start.
            if len(self._line) < MAX_HELD_LINE:
                self._line += text[:MAX_HELD_LINE - len(self._line)]
            return
        *complete, rest = text.split("\n")
        complete[0] = self._line + complete[0]
        self._line = rest[:MAX_HELD_LINE]
        for line in complete:
            if line.strip():
                self._offer(line)

    def _tool(self, update: ToolCallStart | ToolCallProgress) -> None:
        key = update.tool_call_id if isinstance(update.tool_call_id, str) else ""
        if key not in self._calls:
            self._calls.add(key)
            if not self._in_round:
                self.rounds += 1
                self._in_round = True
        title = update.title if isinstance(update.title, str) and update.title.strip() else None
        if title is None and isinstance(update, ToolCallStart) and isinstance(update.kind, str) and update.kind.strip():
            title = update.kind     # a blank kind is no title: a progress line is never empty
        if title is not None and self._titles.get(key) != title:
            self._titles[key] = title
            self._offer(title)
        if update.status == "failed":
            self._offer(f"{self._titles.get(key) or 'tool call'} failed")

    def _plan(self, update: PlanUpdate) -> None:
        step = None
        for wanted in ("in_progress", "pending"):
            step = next((e.content for e in update.entries if e.status == wanted and isinstance(e.content, str)), None)
            if step:
                break
        if step and step != self._plan_step:
            self._plan_step = step
            self._offer(f"plan: {step}")

    def finish(self) -> None:
        """The turn ended: a last line of text without a newline is complete now."""
        if self._line.strip():
            self._offer(self._line)
        self._line = ""
