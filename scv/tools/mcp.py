"""`mcp__<server>__<tool>`: a tool of an MCP server the session uses (docs/mcp.md). One spec per
offered tool, built from what the server listed (scv/mcp/servers.py `OfferedTool`): its Args
Struct has the schema's properties (required ones required, no others), and the arguments are
checked against the server's schema before approval; the call runs in the server's live worker
(workers/mcp/client.py) through the session's `McpServers`.

Risk: the server's `risk` setting, else `read_only` for a tool that declares `readOnlyHint`, else
`network`: the server is another program acting on the model's words."""

import json
from typing import Any

import msgspec

from scv.core.errors import RefusedError
from scv.core.messages import Result
from scv.core.risk import Risk
from scv.tools.base import Launch, ToolContext, ToolSpec, short
from scv.tools.services import Services

_SAMPLES = {"string": "x", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}, "null": None}


def args_struct(schema: dict[str, Any]) -> type[msgspec.Struct]:
    """A Struct of the schema's top-level properties: required ones required, the rest optional
    (left out when not given), any other field refused. Values are checked against the schema."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields: list[Any] = []
    rename = {}
    for index, prop in enumerate(properties):
        attribute = f"p{index}"
        rename[attribute] = prop
        fields.append((attribute, Any) if prop in required else (attribute, Any, msgspec.UNSET))
    fields.sort(key=lambda f: len(f) == 3)      # required fields first
    return msgspec.defstruct("McpArgs", fields, rename=rename, forbid_unknown_fields=True, kw_only=True)


def example_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments of the right types for the required properties (what the conformance test runs)."""
    properties = schema.get("properties") or {}
    example = {}
    for prop in schema.get("required") or ():
        kind = (properties.get(prop) or {}).get("type", "string")
        example[prop] = _SAMPLES.get(kind if isinstance(kind, str) else kind[0], "x")
    return example


class McpTool(ToolSpec):
    name = "mcp"            # the family; each instance has its tool's full name
    description = "A tool of an MCP server the session uses, offered as mcp__<server>__<tool>."
    Args = msgspec.Struct
    executor = "workers.mcp:start"
    declared_risk = Risk.NETWORK
    example: dict[str, Any] = {}

    def __init__(self, services: Services | None, tool: Any):     # tool: scv.mcp.servers.OfferedTool
        super().__init__(services)
        self.tool = tool
        self.name = tool.name
        description = tool.description.strip() or f"The tool {tool.tool} of the MCP server {tool.server}."
        self.description = f"{description} (MCP server {tool.server})"
        self.input_schema = tool.schema
        self._validator: Any = None         # built at the first call: a listed tool may never be called
        self.Args = args_struct(tool.schema)
        self.example = example_of(tool.schema)
        if tool.risk is not None:
            self.declared_risk = Risk(tool.risk)
        else:
            self.declared_risk = Risk.READ_ONLY if tool.read_only else Risk.NETWORK

    def check(self, args: msgspec.Struct, ctx: ToolContext) -> None:
        if self._validator is None:
            from jsonschema import Draft202012Validator     # only in sessions that use MCP servers
            self._validator = Draft202012Validator(self.input_schema)
        error = next(iter(self._validator.iter_errors(msgspec.to_builtins(args))), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            at = f" at {where!r}" if where else ""
            raise RefusedError(f"{self.name} arguments do not match the server's schema{at}: {error.message}; fix "
                               "them (see the tool's schema)")

    def summary(self, args: msgspec.Struct, ctx: ToolContext) -> str:
        shown = short(json.dumps(msgspec.to_builtins(args), ensure_ascii=False), 300)
        return f"call {self.tool.tool} on the MCP server {self.tool.server} with {shown}"

    def worker_args(self, args: msgspec.Struct, ctx: ToolContext) -> dict[str, Any]:
        return msgspec.to_builtins(args)

    def run(self, args: msgspec.Struct, ctx: ToolContext, launch: Launch) -> Result:
        return self.services.mcp.call(self.tool, self.worker_args(args, ctx), launch)

    def schema(self, ctx: ToolContext) -> dict[str, Any]:
        """The server's schema, with only its declared properties allowed."""
        body = {key: value for key, value in self.input_schema.items() if key not in ("title", "$schema")}
        body.setdefault("properties", {})
        body["additionalProperties"] = False
        return body
