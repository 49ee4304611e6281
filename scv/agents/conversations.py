"""Conversations with delegated agents: SCV-issued handles (`codex-2`) over the CLIs' own session
ids, which never reach the model. One turn at a time; at most `max_conversations` per session
(starting another forgets the least recently used idle one) and none left unused for longer than
`idle_seconds` (a session offering a live agent forgets them on time: scv/agents/idle_reaper.py). A live conversation leaves a marker in `$SCV_HOME/state/conversations`, named
after the CLI's session id, so `scv agents gc` keeps its transcript.

A conversation on a live backend (an ACP server, a nested SCV) owns the live worker that serves
its turns, and closes it when it is forgotten:

```
NEW ──begin_turn──▶ BUSY ──end_turn──▶ IDLE ──begin_turn──▶ BUSY ...
                                        IDLE ──reserve──▶ RESERVED ──begin_turn──▶ BUSY
                                                          RESERVED ──release──▶ IDLE
 (first turn reported no session, expiry, eviction, the session's end) ──▶ FORGOTTEN
```
Only an IDLE conversation is ever evicted or expired: a NEW one is about to run its first turn
(another call's `start` must not take it in that gap), and a RESERVED one is continued by a
background job whose thread has not begun the turn yet.
"""

import enum
import functools
import os
import re
import threading
import time
from pathlib import Path
from typing import Callable, Protocol

import msgspec

from scv.core.errors import RefusedError
from scv.core.states import Moves

_SAFE_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"


class ConversationState(enum.Enum):
    NEW = "new"
    RESERVED = "reserved"
    IDLE = "idle"
    BUSY = "busy"
    FORGOTTEN = "forgotten"


CONVERSATION_MOVES = Moves({ConversationState.NEW: {ConversationState.BUSY, ConversationState.FORGOTTEN},
                            ConversationState.RESERVED: {ConversationState.BUSY, ConversationState.IDLE,
                                                         ConversationState.FORGOTTEN},
                            ConversationState.IDLE: {ConversationState.BUSY, ConversationState.RESERVED,
                                                     ConversationState.FORGOTTEN},
                            ConversationState.BUSY: {ConversationState.IDLE, ConversationState.FORGOTTEN},
                            ConversationState.FORGOTTEN: set()})


class LiveResource(Protocol):
    """What a conversation owns on a live backend (scv/supervision/live_worker.py)."""

    def close(self) -> None: ...


class Conversation(msgspec.Struct):
    handle: str
    agent: str
    last_used: float
    cwd: str | None = None          # resolved at the first turn; fixed for the conversation
    vendor_id: str | None = None    # the CLI's own session id, known once the CLI reported it
    new_vendor_id: str | None = None  # an id SCV chose for the first turn (Claude Code)
    turns: int = 0
    state: ConversationState = ConversationState.NEW
    usage_total: dict[str, float] = msgspec.field(default_factory=dict)     # running totals a CLI reports (tool.py)
    live: LiveResource | None = None    # the live worker serving it, on a live backend

    @property
    def busy(self) -> bool:
        return self.state is ConversationState.BUSY

    @property
    def idle(self) -> bool:
        """Nothing runs or is about to run a turn of it: the only state eviction and expiry touch."""
        return self.state is ConversationState.IDLE

    def move(self, to: ConversationState) -> None:
        """The one transition function: refuses a move the lifecycle does not have."""
        self.state = CONVERSATION_MOVES.check(f"conversation {self.handle}", self.state, to)


def write_marker(folder: Path, vendor_id: str, handle: str, agent: str) -> Path | None:
    """Atomically writes the marker (mode 0600 in a 0700 folder); None for an unusable id."""
    if not re.fullmatch(_SAFE_ID, vendor_id):
        return None
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    # PID and start time of the owning SCV process: a reused PID never keeps a dead marker alive.
    from scv.core.delegations.processes import start_time
    body = msgspec.json.encode({"pid": os.getpid(), "start": start_time(os.getpid()), "agent": agent,
                                "handle": handle})
    from scv.core.files import write_atomic     # late: only a conversation's first turn writes a marker
    write_atomic(folder / vendor_id, body, private_folder=False)
    return folder / vendor_id


def _locked(method):
    """One change at a time: the session's turns, its jobs' threads and the idle reaper share the book."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


class Conversations:
    def __init__(self, max_conversations: int, idle_seconds: float, markers: Path,
                 clock: Callable[[], float] = time.monotonic):
        self._lock = threading.RLock()
        self.max = max_conversations
        self.idle_seconds = idle_seconds
        self.markers = markers
        self.clock = clock
        self._by_handle: dict[str, Conversation] = {}
        self._counters: dict[str, int] = {}
        self.closed = False

    @_locked
    def knows(self, handle: str) -> bool:
        self.expire()
        return handle in self._by_handle

    @_locked
    def get(self, handle: str) -> Conversation:
        self.expire()
        conversation = self._by_handle.get(handle)
        if conversation is None:
            raise RefusedError(f"session {handle!r} is not a conversation of this session (it may have been "
                               "forgotten); omit session to start a new conversation")
        return conversation

    @_locked
    def start(self, agent: str) -> Conversation:
        """A new conversation, not yet confirmed: `confirm` or `forget` it after its first turn."""
        self.expire()
        while len(self._by_handle) >= self.max:
            idle = [c for c in self._by_handle.values() if c.idle]
            if not idle:
                raise RefusedError(f"all {self.max} conversations of this session are running a turn or about to; "
                                   "wait for one to finish (agent.max_conversations)")
            self.forget(min(idle, key=lambda c: c.last_used).handle)
        number = self._counters.get(agent, 0) + 1
        self._counters[agent] = number
        conversation = Conversation(handle=f"{agent}-{number}", agent=agent, last_used=self.clock())
        self._by_handle[conversation.handle] = conversation
        return conversation

    @_locked
    def begin_turn(self, conversation: Conversation) -> None:
        self._check_usable(conversation)
        conversation.move(ConversationState.BUSY)    # NEW/IDLE/RESERVED -> BUSY
        conversation.last_used = self.clock()

    @_locked
    def reserve(self, conversation: Conversation) -> None:
        """A background job will run the next turn on its own thread: until it begins (or `release`),
        the conversation is neither evicted nor expired, nor continued by another call."""
        self._check_usable(conversation)
        if conversation.state is not ConversationState.IDLE:
            raise RefusedError(f"session busy: conversation {conversation.handle} is about to run a turn; wait "
                               "for its result, or omit session to start a new conversation")
        conversation.move(ConversationState.RESERVED)    # IDLE -> RESERVED

    @_locked
    def release(self, conversation: Conversation) -> None:
        """The reserved turn will not run (its job never started)."""
        if conversation.state is ConversationState.RESERVED:
            conversation.move(ConversationState.IDLE)    # RESERVED -> IDLE
            conversation.last_used = self.clock()

    @staticmethod
    def _check_usable(conversation: Conversation) -> None:
        if conversation.busy:
            raise RefusedError(f"session busy: conversation {conversation.handle} is running a turn; wait for its "
                               "result, or omit session to start a new conversation")
        if conversation.state is ConversationState.FORGOTTEN:
            raise RefusedError(f"conversation {conversation.handle} was forgotten (unused for longer than "
                               "agent.conversation_idle_seconds, or the session is ending); omit session to start "
                               "a new conversation")

    @_locked
    def end_turn(self, conversation: Conversation, vendor_id: str | None, cwd: str | None) -> bool:
        """Records a finished turn; returns False when the conversation was forgotten because its
        first turn ended before the CLI reported a session."""
        conversation.last_used = self.clock()
        if self.closed:
            # The session ended while this turn ran (a cancelled background job): nothing continues it.
            self.forget(conversation.handle)
            return False
        if vendor_id and conversation.vendor_id is None:
            conversation.vendor_id = vendor_id
            write_marker(self.markers, vendor_id, conversation.handle, conversation.agent)
        if conversation.vendor_id is None:
            self.forget(conversation.handle)
            return False
        if conversation.cwd is None:
            conversation.cwd = cwd
        conversation.turns += 1
        conversation.move(ConversationState.IDLE)    # BUSY -> IDLE
        return True

    @_locked
    def forget(self, handle: str) -> None:
        conversation = self._by_handle.pop(handle, None)
        if conversation is None:
            return
        conversation.move(ConversationState.FORGOTTEN)  # -> FORGOTTEN: nothing continues it
        if conversation.live is not None:
            conversation.live.close()
        if conversation.vendor_id and re.fullmatch(_SAFE_ID, conversation.vendor_id):
            try:
                (self.markers / conversation.vendor_id).unlink()
            except FileNotFoundError:
                pass

    @_locked
    def expire(self) -> None:
        now = self.clock()
        for conversation in list(self._by_handle.values()):
            if conversation.idle and now - conversation.last_used > self.idle_seconds:
                self.forget(conversation.handle)

    @_locked
    def seconds_to_expiry(self) -> float:
        """How long until the next idle conversation expires (idle_seconds when none is idle: one that
        becomes idle later expires later than that)."""
        now = self.clock()
        due = [c.last_used + self.idle_seconds - now for c in self._by_handle.values() if c.idle]
        return max(0.0, min(due, default=self.idle_seconds))

    @_locked
    def close(self) -> None:
        """The SCV session ends: its handles end with it, and so do their markers."""
        self.closed = True
        for handle in list(self._by_handle):
            self.forget(handle)

    def __len__(self) -> int:
        return len(self._by_handle)
