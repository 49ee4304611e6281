"""`[mcp_servers.<name>]` in the user's config.toml, and `scv exec --mcp-config FILE` in the
`{"mcpServers": {...}}` JSON other hosts use: the MCP servers a session uses as tools
(docs/mcp.md). Checked into `McpServer`s before anything runs; every error names the entry's key.
A project's .scv/config.toml cannot add servers (scv/config/load.py refuses the table)."""

import os
import re
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from scv.core.errors import ConfigError

NAME = r"[a-z0-9_-]{1,32}"
_VARIABLE = r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
RiskName = Literal["read_only", "filesystem", "process", "network", "delegate"]


class McpServerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    startup_timeout_seconds: Annotated[float, Meta(gt=0, le=3600)] = 30.0
    required: bool = False
    tools: list[str] | None = None          # an allow-list of the server's tool names
    risk: RiskName | None = None            # instead of readOnlyHint -> read_only, otherwise network


class _JsonEntry(McpServerConfig, forbid_unknown_fields=True, kw_only=True):
    """An entry of a `mcpServers` JSON file: the same keys, plus the other hosts' `type`."""
    type: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None


class McpServer(msgspec.Struct, frozen=True):
    """One server, ready to start: its command resolved, its environment expanded."""
    name: str
    argv: list[str]
    env: dict[str, str]
    startup_timeout_seconds: float
    required: bool
    tools: list[str] | None
    risk: str | None


def servers(table: dict[str, McpServerConfig], config_file: Path | None, where: str) -> dict[str, McpServer]:
    """The session's servers: the user's table, then the JSON file's entries (a name in both: the
    file's). Raises ConfigError naming `mcp_servers.<name>.<key>`."""
    entries: dict[str, tuple[McpServerConfig, str]] = {name: (entry, where) for name, entry in table.items()}
    if config_file is not None:
        entries.update(read_json(config_file))
    return {name: resolve(name, entry, origin) for name, (entry, origin) in entries.items()}


def read_json(path: Path) -> dict[str, tuple[McpServerConfig, str]]:
    import json     # only with --mcp-config: a run without MCP servers does not load it
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"--mcp-config {path} does not exist; give the JSON file of MCP servers") from None
    except OSError as err:
        raise ConfigError(f"--mcp-config {path} cannot be read ({err.strerror}); check its permissions") from None
    except ValueError as err:
        raise ConfigError(f"--mcp-config {path} is not valid JSON ({err}); fix the file") from None
    table = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f"--mcp-config {path} has no \"mcpServers\" object; write "
                          '{"mcpServers": {"<name>": {"command": ..., "args": [...]}}}')
    found = {}
    for name, raw in table.items():
        _check_name(name, str(path))
        try:
            entry = msgspec.convert(raw, _JsonEntry)
        except msgspec.ValidationError as err:
            raise ConfigError(f"{path}: {_key(name, err)}") from None
        if entry.url is not None or entry.type not in (None, "stdio"):
            raise ConfigError(f"{path}: mcp_servers.{name}.{'url' if entry.url is not None else 'type'}: SCV starts "
                              "MCP servers over stdio only; give the server's command (a local bridge for a remote "
                              "server works too)")
        fields = {f: getattr(entry, f) for f in McpServerConfig.__struct_fields__}
        found[name] = (McpServerConfig(**fields), str(path))
    return found


def _key(name: str, err: msgspec.ValidationError) -> str:
    text = str(err)
    unknown = re.match(r"Object contains unknown field `([^`]+)`", text)
    if unknown:
        return f"unknown key mcp_servers.{name}.{unknown.group(1)}; remove it or check its spelling"
    at = re.search(r" - at `\$\.?([^`]*)`$", text)
    key = f"mcp_servers.{name}" + (f".{at.group(1)}" if at and at.group(1) else "")
    message = text[: at.start()] if at else text
    return f"key {key}: {message[0].lower() + message[1:]}; fix the value"


def _check_name(name: str, where: str) -> None:
    if not re.fullmatch(NAME, name) or "__" in name:
        raise ConfigError(f"{where}: mcp_servers.{name} is not a valid server name; use 1-32 of a-z, 0-9, _ and - "
                          "without a double underscore")


def resolve(name: str, entry: McpServerConfig, where: str) -> McpServer:
    _check_name(name, where)
    if not entry.command:
        raise ConfigError(f"{where}: mcp_servers.{name}.command is missing; give the program that serves MCP on "
                          "stdio")
    command = entry.command
    if "/" not in command:
        import shutil   # only for a configured server: shutil loads the compression modules
        found = shutil.which(command)
        if found is None:
            raise ConfigError(f"{where}: mcp_servers.{name}.command {command!r} is not on PATH; install it or give "
                              "its absolute path")
        command = found
    elif not os.path.isabs(command):
        raise ConfigError(f"{where}: mcp_servers.{name}.command {command!r} is a relative path; give its absolute "
                          "path or a name on PATH")
    env = {}
    for key, value in entry.env.items():
        whole = re.fullmatch(_VARIABLE, value)
        if whole is None:
            env[key] = value
            continue
        variable = whole.group("braced") or whole.group("bare")
        if variable not in os.environ:
            raise ConfigError(f"{where}: mcp_servers.{name}.env.{key} takes ${variable}, which is not set; set it or "
                              "remove the entry")
        env[key] = os.environ[variable]
    return McpServer(name=name, argv=[command, *entry.args], env=env,
                     startup_timeout_seconds=entry.startup_timeout_seconds, required=entry.required,
                     tools=entry.tools, risk=entry.risk)
