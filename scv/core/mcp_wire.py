"""The MCP client's messages (SCV using another program's MCP server as tools), on the one
JSON-RPC line connection of scv/core/jsonrpc.py: what SCV sends as Structs, what it reads decoded
only as far as it needs, unknown fields ignored. The worker (workers/mcp/client.py) speaks it; the
supervisor reads the tool list it reports (`ToolInfo`)."""

from typing import Any

import msgspec

# The revision SCV asks for; a server may answer with an older one it speaks (all share what
# SCV uses: initialize, tools/list, tools/call, progress and cancelled notifications).
CLIENT_VERSION = "2025-06-18"
KNOWN_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# Keys of a call's result for its span only (the JSON-RPC id, the conventions' `error.type` of a
# failure: `tool_error` for an `isError` result, else the error answer's code): the
# supervisor takes them out before anyone else sees the result (scv/mcp/servers.py).
REQUEST_ID = "_mcp_request_id"
ERROR_TYPE = "_mcp_error_type"


class ClientInfo(msgspec.Struct):
    name: str
    version: str


class InitializeParams(msgspec.Struct, rename="camel"):
    protocol_version: str
    capabilities: dict[str, Any]
    client_info: ClientInfo


class ServerInfo(msgspec.Struct):
    name: str = ""
    version: str = ""


class InitializeResult(msgspec.Struct, rename="camel"):
    protocol_version: str
    capabilities: dict[str, Any] = {}
    server_info: ServerInfo = msgspec.field(default_factory=ServerInfo)


class Annotations(msgspec.Struct, rename="camel"):
    read_only_hint: bool | None = None


class ToolInfo(msgspec.Struct, rename="camel"):
    """One tool as the server lists it (what SCV keeps of it)."""
    name: str
    input_schema: dict[str, Any] = {}
    description: str = ""
    annotations: Annotations | None = None


class ToolsListParams(msgspec.Struct, omit_defaults=True):
    cursor: str | None = None


class ToolsListResult(msgspec.Struct, rename="camel"):
    tools: list[ToolInfo] = []
    next_cursor: str | None = None


class CallParams(msgspec.Struct, omit_defaults=True):
    name: str
    arguments: dict[str, Any]
    _meta: dict[str, Any] | None = None


class CallResult(msgspec.Struct, rename="camel"):
    content: list[dict[str, Any]] = []
    structured_content: dict[str, Any] | None = None
    is_error: bool = False


class ProgressParams(msgspec.Struct, rename="camel"):
    progress_token: int | str
    progress: float = 0
    total: float | None = None
    message: str | None = None


class CancelledParams(msgspec.Struct, rename="camel", omit_defaults=True):
    request_id: int
    reason: str | None = None
