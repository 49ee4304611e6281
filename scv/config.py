"""Configuration: `$SCV_HOME/config.toml` (the user's) and `<workspace>/.scv/config.toml`
(the project's), decoded into typed Structs. An unknown key or a wrong type is an error that
names the file and the key. A project file may only set the keys in PROJECT_KEYS: it comes
with the repository, so it must not loosen approvals, pick providers or agents, or open the
network.
"""

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from scv.errors import ConfigError
from scv.sandbox.policy import STRICTNESS
from scv.web.config import WebConfig

PositiveInt = Annotated[int, Meta(ge=1)]
SandboxMode = Literal["off", "workspace-write", "read-only"]


class ToolsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    approval_policy: Literal["on-risk", "never"] = "on-risk"
    output_limit_bytes: Annotated[int, Meta(ge=1024, le=16 * 1024 * 1024)] = 65536
    command_timeout_seconds: PositiveInt = 600
    agent_timeout_seconds: PositiveInt = 3600
    max_timeout_seconds: PositiveInt = 14400
    worker_memory_mb: Annotated[int, Meta(ge=64)] = 2048
    # The OS sandbox of `bash` and delegated agents (scv/sandbox/): off by default.
    sandbox: SandboxMode = "off"
    sandbox_network: bool = False           # with a sandbox: False blocks all network, loopback included
    sandbox_writable: list[str] = []        # extra folders a workspace-write sandbox may write (absolute)


class ProviderSelect(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    active: str | None = None       # a name under [providers]; None: no model endpoint configured


class ProviderProfile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kind: Literal["openai"] = "openai"      # any OpenAI-compatible endpoint
    wire_api: Literal["responses", "chat"] = "responses"
    model: str | None = None
    base_url: str = "https://api.openai.com/v1"
    timeout: Annotated[float, Meta(gt=0)] = 600.0
    headers: dict[str, str] = {}
    api_key: str | None = None
    api_key_env: str | None = None


class AgentConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[agent]: the session's own model loop (delegation keys join this table later)."""
    system_prompt: str | None = None        # None: the built-in prompt (scv/prompt.py)
    max_turns: Annotated[int, Meta(ge=1, le=10000)] = 50    # model responses within one turn
    # Delegation (the `agent` tool; checked against the known agents in scv/agents/settings.py).
    prefer: list[str] = []                  # the first one the session offers is the default
    max_conversations: Annotated[int, Meta(ge=1, le=1000)] = 8
    conversation_idle_seconds: PositiveInt = 86400
    max_delegation_depth: Annotated[int, Meta(ge=0, le=16)] = 2
    max_background: Annotated[int, Meta(ge=0, le=64)] = 4     # background jobs at once; 0 turns them off


class AgentSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[agents.NAME]: the user's notes and defaults for one delegated agent."""
    use_for: str | None = None
    model: str | None = None
    effort: str | None = None               # low, medium, high, xhigh or max (checked with the agent)
    permissions: str = "default"            # "default" or "full" (the CLI's own full-autonomy switches)
    sandbox: SandboxMode | None = None      # None: as [tools] sandbox; "off" exempts this agent
    sandbox_network: bool | None = None     # None: as [tools] sandbox_network (an agent calls its provider)


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    tools: ToolsConfig = msgspec.field(default_factory=ToolsConfig)
    provider: ProviderSelect = msgspec.field(default_factory=ProviderSelect)
    providers: dict[str, ProviderProfile] = {}
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    agents: dict[str, AgentSettings] = {}
    web: WebConfig = msgspec.field(default_factory=WebConfig)


# Keys a project's .scv/config.toml may set; everything else is the user's alone.
PROJECT_KEYS = {
    ("tools", "output_limit_bytes"),
    ("tools", "command_timeout_seconds"),
    ("tools", "agent_timeout_seconds"),
    ("tools", "approval_policy"),   # only to tighten it: checked below
    ("tools", "sandbox"),           # only to tighten it
    ("tools", "sandbox_network"),   # only to turn it off
}


def scv_home() -> Path:
    value = os.environ.get("SCV_HOME")
    return Path(value) if value else Path.home() / ".scv"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix the file") from None
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror}); check its permissions") from None


_AT = re.compile(r" - at `\$\.?(?P<at>[^`]*)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]+)`")


def _named(at: str, data: dict[str, Any]) -> str:
    """msgspec says `agents[...]` for a table of [agents]: find which one it means."""
    section, marker, rest = at.partition("[...]")
    tables = data.get(section)
    kind = {"agents": AgentSettings, "providers": ProviderProfile}.get(section)
    if not marker or kind is None or not isinstance(tables, dict):
        return at
    for name, table in tables.items():
        try:
            msgspec.convert(table, kind)
        except msgspec.ValidationError:
            return f"{section}.{name}{rest}"
    return at


def _explain(exc: msgspec.ValidationError, path: Path, data: dict[str, Any] | None = None) -> ConfigError:
    text = str(exc)
    at_match = _AT.search(text)
    at = _named(at_match.group("at"), data or {}) if at_match else ""
    message = text[: at_match.start()] if at_match else text
    unknown = _UNKNOWN.match(message)
    if unknown:
        key = ".".join(filter(None, [at, unknown.group("field")]))
        return ConfigError(f"{path}: unknown key {key}; remove it or check its spelling")
    return ConfigError(f"{path}: key {at or '(top level)'}: {message[0].lower() + message[1:]}; fix the value")


def _check_project_keys(data: dict[str, Any], path: Path, user: dict[str, Any]) -> None:
    user_tools = user.get("tools") if isinstance(user.get("tools"), dict) else {}
    for section, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {section} may not be set by a project config; move it to the user's config.toml")
        for key, value in table.items():
            if (section, key) not in PROJECT_KEYS:
                raise ConfigError(f"{path}: {section}.{key} may not be set by a project config; "
                                  "move it to the user's config.toml")
            if (section, key) == ("tools", "approval_policy") and value != "never":
                raise ConfigError(f"{path}: a project config may only tighten tools.approval_policy to \"never\"")
            if (section, key) == ("tools", "sandbox"):
                ours = user_tools.get("sandbox", "off")
                if value in STRICTNESS and STRICTNESS.get(ours, 0) > STRICTNESS[value]:
                    raise ConfigError(f"{path}: a project config may only tighten tools.sandbox (the user's is "
                                      f"\"{ours}\"); remove it or pick a stricter mode")
            if (section, key) == ("tools", "sandbox_network") and value is True \
                    and user_tools.get("sandbox_network", False) is not True:
                raise ConfigError(f"{path}: a project config may only turn tools.sandbox_network off; remove it")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def check_writable(entries: list[str], path: Path) -> None:
    """Each extra writable folder is absolute, exists, and is named by its real path: a symlink
    would grant a place other than the one the file names."""
    for index, entry in enumerate(entries):
        key = f"{path}: tools.sandbox_writable[{index}] {entry!r}"
        if not entry.startswith("/"):
            raise ConfigError(f"{key} is relative; give the folder's absolute path")
        if not os.path.lexists(entry):
            raise ConfigError(f"{key} does not exist; create the folder or remove the entry")
        real = os.path.realpath(entry)
        if real != os.path.normpath(entry):
            raise ConfigError(f"{key} goes through a symlink (it is {real}); name the real folder")
        if not os.path.isdir(entry):
            raise ConfigError(f"{key} is not a folder; name a folder")


def load_config(workspace: Path | None, home: Path | None = None) -> Config:
    """Reads the user's file, then the project's over it; each is validated on its own first."""
    user_path = (home or scv_home()) / "config.toml"
    user = _read_toml(user_path)
    try:
        msgspec.convert(user, Config)
    except msgspec.ValidationError as exc:
        raise _explain(exc, user_path, user) from None
    merged = user
    if workspace is not None:
        project_path = workspace / ".scv" / "config.toml"
        project = _read_toml(project_path)
        if project:
            _check_project_keys(project, project_path, user)
            try:
                msgspec.convert(project, Config)
            except msgspec.ValidationError as exc:
                raise _explain(exc, project_path, project) from None
            merged = _merge(user, project)
    config = msgspec.convert(merged, Config)
    if config.tools.command_timeout_seconds > config.tools.max_timeout_seconds:
        raise ConfigError(f"tools.command_timeout_seconds ({config.tools.command_timeout_seconds}) is over "
                          f"tools.max_timeout_seconds ({config.tools.max_timeout_seconds}); lower it")
    check_writable(config.tools.sandbox_writable, user_path)
    from scv.agents.settings import check_agent_settings   # late: it reads the agent descriptors
    check_agent_settings(config, user_path)
    return config
