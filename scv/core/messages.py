"""The messages between supervisor and worker: one tagged union per direction.

Each side builds its decoder once and dispatches on the decoded type with `match`.
"""

from typing import Any, Union

import msgspec
from msgspec import UNSET, UnsetType

from scv.core.errors import ProtocolError


# --- supervisor -> worker -------------------------------------------------------------------

class Call(msgspec.Struct, tag="call", frozen=True):
    """One tool call: arguments already validated by the tool's Args Struct."""

    tool: str
    executor: str               # "module:function", preloaded by the fork point
    args: dict[str, Any]
    workspace: str              # absolute, resolved workspace root
    handle: str                 # "<instance>/<call-id>", the tag children carry in SCV_CALL
    timeout_seconds: float
    output_limit_bytes: int
    options: dict[str, Any] = {}  # tool settings taken from the configuration
    id: str = ""                # the call's id; a live worker serves several, one at a time


class Cancel(msgspec.Struct, tag="cancel", frozen=True):
    id: str = ""                # the call to cancel ("": whichever runs); a late one is ignored


class ApprovalAnswer(msgspec.Struct, tag="approval_answer", frozen=True):
    id: str
    approved: bool


ToWorker = Union[Call, Cancel, ApprovalAnswer]


# --- worker -> supervisor -------------------------------------------------------------------

class Progress(msgspec.Struct, tag="progress", frozen=True):
    line: str


class ApprovalRequest(msgspec.Struct, tag="approval_request", frozen=True):
    id: str
    tool: str
    risk: str
    summary: str


class AgentPrivate(msgspec.Struct, tag="agent", frozen=True):
    """What an agent run tells the supervisor and never the model: the agent's own session id
    (a conversation continues with it), the directory it ran in, and whether the agent itself
    could run (False: missing, failed to start, signed out, or its provider refused; the
    result then offers the other agents as a fallback); a live agent also says when its
    conversation cannot go on (its server was stopped or exited)."""

    vendor_session: str | None = None
    cwd: str | None = None
    available: bool | None = None
    conversation_ended: bool | None = None


class RateLimit(msgspec.Struct, frozen=True):
    """The agent's account hit a usage or rate limit (HTTP 429, Claude Code's rejected
    `rate_limit_event`, Codex's usage-limit error): another try before `resets_at` (epoch
    seconds; None when the agent did not say) fails the same way. `scv batch` pauses the agent."""

    reason: str                         # "usage limit" or "rate limit"
    resets_at: float | None = None


class AgentResult(msgspec.Struct, kw_only=True):
    """One delegated agent turn as every backend reports it (the CLI once per turn, an ACP server,
    a nested SCV), built in the worker from a blank one and sent as a `Result`: `public()` is what
    the model reads, `private` what only the supervisor does. A field left UNSET is not shown."""

    agent: str
    status: str = "failed"
    reply: str = ""
    usage: dict[str, Any] | None = None
    # A nested SCV has no exit code or stderr of its turn to show, and says `truncated` only when cut.
    exit_code: int | None | UnsetType = None
    stderr_tail: str | UnsetType = ""
    truncated: bool | UnsetType = False
    hint: str | UnsetType = UNSET              # how to get the agent going again (sign in, ...)
    sandbox: dict[str, Any] | UnsetType = UNSET     # the OS sandbox it ran in, and what it refused
    rate_limit: RateLimit | UnsetType = UNSET       # a failure that waiting out the limit would avoid
    limit: dict[str, Any] | UnsetType = UNSET       # status "limit": {kind, max, used} (docs/limits.md)
    private: AgentPrivate = msgspec.field(default_factory=AgentPrivate)

    def public(self) -> dict[str, Any]:
        return {name: value for name in _AGENT_PUBLIC if (value := getattr(self, name)) is not UNSET}

    def keep_private(self, **changes: Any) -> None:
        self.private = msgspec.structs.replace(self.private, **changes)


_AGENT_PUBLIC = tuple(name for name in AgentResult.__struct_fields__ if name != "private")


class Result(msgspec.Struct, tag="result", frozen=True):
    ok: bool
    value: dict[str, Any]                   # what the model reads
    private: AgentPrivate | None = None     # the supervisor's part, removed before anyone sees the result


FromWorker = Union[Progress, ApprovalRequest, Result]


_encoder = msgspec.msgpack.Encoder()
_to_worker = msgspec.msgpack.Decoder(ToWorker)
_from_worker = msgspec.msgpack.Decoder(FromWorker)


def encode(msg: msgspec.Struct) -> bytes:
    return _encoder.encode(msg)


def decode_to_worker(payload: bytes) -> Call | Cancel | ApprovalAnswer:
    try:
        return _to_worker.decode(payload)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"the worker got a message it cannot decode: {exc}") from None


def decode_from_worker(payload: bytes) -> Progress | ApprovalRequest | Result:
    try:
        return _from_worker.decode(payload)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"the worker sent a message that cannot be decoded: {exc}") from None


# --- supervisor <-> fork point (a SOCK_SEQPACKET socket: one message per packet) -----------

class Spawn(msgspec.Struct, tag="spawn", frozen=True):
    """Fork a worker for `call_id`; the packet carries its three pipe ends as SCM_RIGHTS."""

    call_id: str
    memory_bytes: int
    kind: str = "call"          # "call": one call, then exit; "live": every call of a conversation
    prepare: str = ""           # the sandbox a spare can make ready for it (scv.core.sandbox.policy.preparation)
    plan: dict[str, Any] | None = None   # its sandbox plan, which the next such spare applies ahead


class Spawned(msgspec.Struct, tag="spawned", frozen=True):
    call_id: str
    pid: int


class Exited(msgspec.Struct, tag="exited", frozen=True):
    call_id: str
    pid: int
    status: int                 # the raw wait status


class SpawnFailed(msgspec.Struct, tag="spawn_failed", frozen=True):
    call_id: str
    error: str


FromForkPoint = Union[Spawned, Exited, SpawnFailed]

_to_fork_point = msgspec.msgpack.Decoder(Spawn)
_from_fork_point = msgspec.msgpack.Decoder(FromForkPoint)


def decode_spawn(payload: bytes) -> Spawn:
    return _to_fork_point.decode(payload)


def decode_from_fork_point(payload: bytes) -> Spawned | Exited | SpawnFailed:
    try:
        return _from_fork_point.decode(payload)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"the fork point sent a message that cannot be decoded: {exc}") from None
