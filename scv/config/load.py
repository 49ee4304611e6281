"""Configuration: `$SCV_HOME/config.toml` (the user's) and `<workspace>/.scv/config.toml`
(the project's), decoded into typed Structs. An unknown key or a wrong type is an error that
names the file and the key. A project file may only set the keys in PROJECT_KEYS: it comes
with the repository, so it must not loosen approvals, pick providers or agents, or open the
network.
"""

import math
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from scv.config.mcp import McpServerConfig
from scv.config.agents import AgentConfig, AgentSettings, SandboxMode, check_agent_settings
from scv.config.web import WebConfig
from scv.core.errors import ConfigError
from scv.core.limits import Limits
from scv.core.usage import Price

PositiveInt = Annotated[int, Meta(ge=1)]


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
    # Where namespaces cannot be made: "refuse" the call, or run it with Landlock and seccomp alone
    # (the user's config only: a project must not weaken the sandbox).
    sandbox_fallback: Literal["refuse", "landlock-only"] = "refuse"


class ProviderSelect(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    active: str | None = None       # a name under [providers]; None: no model endpoint configured


DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


class ProviderProfile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kind: Literal["openai", "anthropic"] = "openai"     # any OpenAI-compatible endpoint, or Anthropic's Messages API
    wire_api: Literal["responses", "chat"] = "responses"    # kind = "openai" only
    model: str | None = None
    base_url: str | None = None         # None: the kind's public endpoint (DEFAULT_BASE_URLS)
    max_tokens: Annotated[int, Meta(gt=0)] = 8192   # kind = "anthropic": the reply's limit, which its API requires
    timeout: Annotated[float, Meta(gt=0)] = 600.0
    headers: dict[str, str] = {}
    api_key: str | None = None
    api_key_env: str | None = None

    @property
    def endpoint(self) -> str:
        """The base URL the requests go to: the configured one, or the kind's public endpoint."""
        return self.base_url or DEFAULT_BASE_URLS[self.kind]


class SkillsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[skills]: discovery at session start and `read_skill` (docs/configuration.md#skills)."""
    enabled: bool = True
    max_skills: Annotated[int, Meta(ge=0, le=1024)] = 64
    max_skill_bytes: Annotated[int, Meta(ge=1024, le=16 * 1024 * 1024)] = 65536


class ChatConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[chat]: chat-channel sessions (docs/channels.md)."""
    archive_dir: str | None = None          # an absolute path; None: $SCV_HOME/archive


class BatchConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[batch]: the commit `scv batch --isolate worktree` makes after each task (docs/batch.md)."""
    commit_author: str | None = None        # "Name <email>"; None: the repository's identity, else SCV's
    commit_message: str = "scv batch {id}: {prompt_first_line}"


class TelemetryConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[telemetry]: what spans may carry (docs/tracing.md); the OTEL_* variables turn tracing on.
    The user's alone: a repository must not make a run export its prompts."""
    content: bool = False           # prompt, reply and argument text on spans


PositiveFloat = Annotated[float, Meta(gt=0)]
Rate = Annotated[float, Meta(ge=0)]


class LimitsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[limits]: every run's ceilings (docs/limits.md); a project file may only lower one or set an unset one."""
    max_turns: PositiveInt | None = None
    max_tokens: PositiveInt | None = None
    max_cost_usd: PositiveFloat | None = None


class PriceConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[prices."model"]: USD per million tokens; SCV ships none (they go stale)."""
    input: Rate
    cached_input: Rate
    output: Rate


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    tools: ToolsConfig = msgspec.field(default_factory=ToolsConfig)
    provider: ProviderSelect = msgspec.field(default_factory=ProviderSelect)
    providers: dict[str, ProviderProfile] = {}
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    agents: dict[str, AgentSettings] = {}
    web: WebConfig = msgspec.field(default_factory=WebConfig)
    skills: SkillsConfig = msgspec.field(default_factory=SkillsConfig)
    chat: ChatConfig = msgspec.field(default_factory=ChatConfig)
    batch: BatchConfig = msgspec.field(default_factory=BatchConfig)
    telemetry: TelemetryConfig = msgspec.field(default_factory=TelemetryConfig)
    mcp_servers: dict[str, McpServerConfig] = {}      # the user's alone (docs/mcp.md)
    limits: LimitsConfig = msgspec.field(default_factory=LimitsConfig)
    prices: dict[str, PriceConfig] = {}


# Keys a project's .scv/config.toml may set; everything else is the user's alone.
PROJECT_KEYS = {
    ("tools", "output_limit_bytes"),
    ("tools", "command_timeout_seconds"),
    ("tools", "agent_timeout_seconds"),
    ("tools", "approval_policy"),   # only to tighten it: checked below
    ("tools", "sandbox"),           # only to tighten it
    ("tools", "sandbox_network"),   # only to turn it off
    ("limits", "max_turns"),        # only to set an unset one or lower one
    ("limits", "max_tokens"),
    ("limits", "max_cost_usd"),
}


def scv_home() -> Path:
    value = os.environ.get("SCV_HOME")
    return Path(value) if value else Path.home() / ".scv"


def user_config_path(home: Path | None = None) -> Path:
    return (home or scv_home()) / "config.toml"


def project_config_path(workspace: Path) -> Path:
    return workspace / ".scv" / "config.toml"


def read_config_file(path: Path) -> dict[str, Any]:
    """A config file's tables as TOML gives them ({} when there is none); raises ConfigError."""
    try:
        with open(path, "rb") as fh:
            import tomllib      # only once there is a file to read: many runs have none
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc.strerror}); check its permissions") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix the file") from None


_AT = r" - at `\$\.?(?P<at>[^`]*)`$"
_UNKNOWN = r"^Object contains unknown field `(?P<field>[^`]+)`"


def _explain(exc: msgspec.ValidationError, path: Path, within: str = "") -> ConfigError:
    text = str(exc)
    at_match = re.search(_AT, text)
    at = ".".join(filter(None, [within, at_match.group("at") if at_match else ""]))
    message = text[: at_match.start()] if at_match else text
    unknown = re.match(_UNKNOWN, message)
    if unknown:
        key = ".".join(filter(None, [at, unknown.group("field")]))
        return ConfigError(f"{path}: unknown key {key}; remove it or check its spelling")
    return ConfigError(f"{path}: key {at or '(top level)'}: {message[0].lower() + message[1:]}; fix the value")


# Tables of named entries: msgspec reports a key inside one as `agents[...]`, so each entry is
# checked on its own first and its error names it (`agents.claude.transport`).
_NAMED_TABLES = (("agents", AgentSettings), ("providers", ProviderProfile), ("mcp_servers", McpServerConfig),
                 ("prices", PriceConfig))


def _convert(data: dict[str, Any], path: Path) -> None:
    _check_numbers(data, path)
    for section, kind in _NAMED_TABLES:
        table = data.get(section)
        if not isinstance(table, dict):
            continue
        for name, entry in table.items():
            try:
                msgspec.convert(entry, kind)
            except msgspec.ValidationError as exc:
                raise _explain(exc, path, f"{section}.{name}") from None
    try:
        msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise _explain(exc, path) from None


def _check_project_keys(data: dict[str, Any], path: Path, user: dict[str, Any]) -> None:
    user_tools = user.get("tools") if isinstance(user.get("tools"), dict) else {}
    user_limits = user.get("limits") if isinstance(user.get("limits"), dict) else {}
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
                from scv.core.sandbox.policy import STRICTNESS     # the sandbox's rules, only for this key
                ours = user_tools.get("sandbox", "off")
                if value in STRICTNESS and STRICTNESS.get(ours, 0) > STRICTNESS[value]:
                    raise ConfigError(f"{path}: a project config may only tighten tools.sandbox (the user's is "
                                      f"\"{ours}\"); remove it or pick a stricter mode")
            if (section, key) == ("tools", "sandbox_network") and value is True \
                    and user_tools.get("sandbox_network", False) is not True:
                raise ConfigError(f"{path}: a project config may only turn tools.sandbox_network off; remove it")
            if section == "limits":
                ours = user_limits.get(key)
                if _number(ours) and _number(value) and value > ours:
                    raise ConfigError(f"{path}: key limits.{key} ({value}) raises the user's limit ({ours}); a project "
                                      "config may only lower a limit or set one the user left unset")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_numbers(data: dict[str, Any], path: Path) -> None:
    """NaN and infinity pass a `> 0` check; no limit or price may be one."""
    tables = [("limits", data.get("limits"))]
    if isinstance(data.get("prices"), dict):
        tables += [(f"prices.{json_key(name)}", entry) for name, entry in data["prices"].items()]
    for prefix, table in tables:
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{path}: key {prefix}.{key}: expected a finite positive number, not {value}; "
                                  "fix the value")


def json_key(name: str) -> str:
    return f'"{name}"' if not re.fullmatch(r"[A-Za-z0-9_-]+", name) else name


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
    user_path = user_config_path(home)
    user = read_config_file(user_path)
    _convert(user, user_path)
    merged = user
    if workspace is not None:
        project_path = project_config_path(workspace)
        project = read_config_file(project_path)
        if project:
            _check_project_keys(project, project_path, user)
            _convert(project, project_path)
            merged = _merge(user, project)
    config = msgspec.convert(merged, Config)
    if config.tools.command_timeout_seconds > config.tools.max_timeout_seconds:
        raise ConfigError(f"tools.command_timeout_seconds ({config.tools.command_timeout_seconds}) is over "
                          f"tools.max_timeout_seconds ({config.tools.max_timeout_seconds}); lower it")
    archive = config.chat.archive_dir
    if archive is not None and not (archive.startswith("/") and "\x00" not in archive):
        raise ConfigError(f"{user_path}: key chat.archive_dir must be an absolute path, not {archive!r}; fix the value")
    check_writable(config.tools.sandbox_writable, user_path)
    check_agent_settings(config.agent, config.agents, user_path, prices_of(config))
    return config


def prices_of(config: Config) -> dict[str, Price]:
    return {model: Price(input=p.input, cached_input=p.cached_input, output=p.output)
            for model, p in config.prices.items()}


def run_limits(config: Config) -> Limits:
    return Limits(max_turns=config.limits.max_turns, max_tokens=config.limits.max_tokens,
                  max_cost_usd=config.limits.max_cost_usd)
