"""The Agent Client Protocol on the wire: newline-delimited JSON-RPC 2.0 over a pipe pair (the
one connection in scv/core/jsonrpc.py: ids per direction, bounded lines, unknown fields and
notifications ignored), with ACP's camelCase method Structs, one decoder per direction.
Whatever the agent sends that this client does not know (`session/update` variants too) is
ignored and the connection goes on.
"""

from typing import Any, Union

import msgspec

from scv.core import jsonrpc
from scv.core.jsonrpc import Incoming, Response, RpcError, WireError  # noqa: F401  (ACP's names for them)

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = jsonrpc.MAX_LINE_BYTES
METHOD_NOT_FOUND = jsonrpc.METHOD_NOT_FOUND
INVALID_PARAMS = jsonrpc.INVALID_PARAMS
AUTH_REQUIRED = -32000

# --- agent -> client: the parts the conversation reads -------------------------------------

class _Camel(msgspec.Struct, rename="camel", gc=False):
    pass


class AgentInfo(_Camel):
    name: Any = None
    version: Any = None


class InitializeResult(_Camel):
    protocol_version: int
    agent_info: AgentInfo | None = None


class Mode(_Camel):
    id: str
    name: Any = None


class Modes(_Camel):
    current_mode_id: Any = None
    available_modes: list[Mode] = []


class ConfigOption(_Camel):
    id: str
    name: Any = None
    category: Any = None
    type: Any = None
    current_value: Any = None
    options: list[Any] = []

    def values(self) -> list[str]:
        """The values a select option offers, flattening ACP's option groups."""
        out = []
        for entry in self.options:
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("value"), str):
                out.append(entry["value"])
            elif isinstance(entry.get("options"), list):
                out.extend(o["value"] for o in entry["options"] if isinstance(o, dict) and isinstance(o.get("value"), str))
        return out


class NewSessionResult(_Camel):
    session_id: str
    modes: Modes | None = None
    config_options: list[ConfigOption] | None = None


class ConfigOptionsResult(_Camel):
    config_options: list[ConfigOption] | None = None


class Usage(_Camel):
    input_tokens: Any = None
    output_tokens: Any = None
    cached_read_tokens: Any = None


class PromptResult(_Camel):
    stop_reason: str
    usage: Usage | None = None


class Location(_Camel):
    path: Any = None


class PermissionToolCall(_Camel):
    tool_call_id: Any = None
    title: Any = None
    kind: Any = None
    locations: list[Location] | None = None


class PermissionOption(_Camel):
    option_id: str
    kind: Any = None
    name: Any = None


class PermissionParams(_Camel):
    tool_call: PermissionToolCall
    options: list[PermissionOption] = []
    session_id: Any = None


# session/update: a union tagged by `sessionUpdate`. Variants the conversation has no use for are
# listed too, as empty Structs whose fields are skipped, so the common ones cost no exception.

class _Update(msgspec.Struct, tag_field="sessionUpdate", rename="camel", gc=False):
    pass


class ContentBlock(_Camel):
    type: Any = None
    text: Any = None


class MessageChunk(_Update, tag="agent_message_chunk"):
    content: ContentBlock | None = None


class ToolCallStart(_Update, tag="tool_call"):
    tool_call_id: Any = None
    title: Any = None
    kind: Any = None
    status: Any = None


class ToolCallProgress(_Update, tag="tool_call_update"):
    tool_call_id: Any = None
    title: Any = None
    kind: Any = None
    status: Any = None


class PlanEntry(_Camel):
    content: Any = None
    status: Any = None


class PlanUpdate(_Update, tag="plan"):
    entries: list[PlanEntry] = []


class ConfigOptionUpdate(_Update, tag="config_option_update"):
    config_options: list[ConfigOption] = []


class CurrentModeUpdate(_Update, tag="current_mode_update"):
    current_mode_id: Any = None


class ThoughtChunk(_Update, tag="agent_thought_chunk"):
    pass


class UserChunk(_Update, tag="user_message_chunk"):
    pass


class UsageUpdate(_Update, tag="usage_update"):
    pass


class CommandsUpdate(_Update, tag="available_commands_update"):
    pass


class SessionInfoUpdate(_Update, tag="session_info_update"):
    pass


Update = Union[MessageChunk, ToolCallStart, ToolCallProgress, PlanUpdate, ConfigOptionUpdate, CurrentModeUpdate,
               ThoughtChunk, UserChunk, UsageUpdate, CommandsUpdate, SessionInfoUpdate]


class SessionNotification(_Camel):
    update: Update
    session_id: Any = None


_update = msgspec.json.Decoder(SessionNotification)


def decode_as(raw: msgspec.Raw | None, kind: type):
    """`raw` as `kind`; WireError (one sentence) when it has another shape."""
    return jsonrpc.decode_as(raw, kind, "the agent's")


def decode_update(params: msgspec.Raw) -> Update | None:
    """A `session/update`'s update; None for a variant this client does not know (or a broken one)."""
    try:
        return _update.decode(params).update
    except msgspec.DecodeError:
        return None


# --- client -> agent -----------------------------------------------------------------------

class FileSystemCapability(_Camel):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientCapabilities(_Camel):
    fs: FileSystemCapability = msgspec.field(default_factory=FileSystemCapability)
    terminal: bool = False


class ClientInfo(_Camel):
    name: str
    version: str


class InitializeParams(_Camel):
    protocol_version: int
    client_capabilities: ClientCapabilities
    client_info: ClientInfo


class NewSessionParams(_Camel):
    cwd: str
    mcp_servers: list[Any] = []


class SetModeParams(_Camel):
    session_id: str
    mode_id: str


class SetConfigOptionParams(_Camel):
    session_id: str
    config_id: str
    value: str


class TextBlock(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class PromptParams(_Camel):
    session_id: str
    prompt: list[TextBlock]
    # The call's span (traceparent, tracestate), when SCV traces: docs/tracing.md.
    meta: dict[str, str] | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name="_meta")


class CancelParams(_Camel):
    session_id: str


class SelectedOutcome(msgspec.Struct, tag_field="outcome", tag="selected", rename="camel"):
    option_id: str


class CancelledOutcome(msgspec.Struct, tag_field="outcome", tag="cancelled"):
    pass


class PermissionResult(msgspec.Struct):
    outcome: SelectedOutcome | CancelledOutcome


class Wire(jsonrpc.Connection):
    """Both directions of one ACP connection (the agent is the peer)."""

    def __init__(self, first_id: int = 0, limit: int = MAX_LINE_BYTES):
        super().__init__(first_id, limit, peer="the agent")
