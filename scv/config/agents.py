"""The user's `[agent]` delegation keys and `[agents.NAME]` tables: typed Structs (msgspec
checks the values it can, such as `effort` and `permissions`), and the checks types cannot
express: known agent names, one-line `use_for` notes, and `model`/`effort` only on agents that
take them. (A project config cannot set these keys at all: see scv/config/load.py.)"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta

from scv.core.agents.options import check_model
from scv.core.errors import ConfigError, RefusedError
from scv.core.limits import Limits
from scv.core.usage import Price

if TYPE_CHECKING:     # the agent catalog loads only when a config names an agent
    from scv.core.agents.descriptors import Descriptor

PositiveInt = Annotated[int, Meta(ge=1)]
SandboxMode = Literal["off", "workspace-write", "read-only"]


class AgentConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[agent]: the session's own model loop (delegation keys join this table later)."""
    system_prompt: str | None = None        # None: the built-in prompt (scv/session/prompt.py)
    max_turns: Annotated[int, Meta(ge=1, le=10000)] = 50    # model responses within one turn
    # Delegation (the `agent` tool; checked against the known agents in scv/config/agents.py).
    prefer: list[str] = []                  # the first one the session offers is the default
    max_conversations: Annotated[int, Meta(ge=1, le=1000)] = 8
    conversation_idle_seconds: PositiveInt = 86400
    max_delegation_depth: Annotated[int, Meta(ge=0, le=16)] = 2
    max_background: Annotated[int, Meta(ge=0, le=64)] = 4     # background jobs at once; 0 turns them off


class AgentSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """[agents.NAME]: the user's notes and defaults for one delegated agent."""
    use_for: str | None = None
    model: str | None = None
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    permissions: Literal["default", "full"] = "default"     # "full": the CLI's own full-autonomy switches
    # auto: the ACP server when installed (and `command` is the built-in one), else the CLI per turn.
    transport: Literal["auto", "acp", "resume"] = "auto"
    command: str | None = None              # the CLI to run instead of the built-in one (a name or a path)
    args: list[str] | None = None           # its fixed arguments instead of the built-in ones
    sandbox: SandboxMode | None = None      # None: as [tools] sandbox; "off" exempts this agent
    sandbox_network: bool | None = None     # None: as [tools] sandbox_network (an agent calls its provider)
    # Each call's ceilings (docs/limits.md); the run's budget left may lower them further.
    max_turns: PositiveInt | None = None
    max_tokens: PositiveInt | None = None
    max_cost_usd: Annotated[float, Meta(gt=0)] | None = None


MAX_USE_FOR_BYTES = 500


def _known() -> str:
    from scv.core.agents.descriptors import DESCRIPTORS
    return ", ".join(DESCRIPTORS)


def check_agent_settings(agent: AgentConfig, agents: dict[str, AgentSettings], path: Path,
                         prices: "dict[str, Price] | None" = None) -> None:
    if not (agent.prefer or agents):
        return      # nothing names an agent: the catalog need not be loaded
    from scv.core.agents.descriptors import DESCRIPTORS
    for name in agent.prefer:
        if name not in DESCRIPTORS:
            raise ConfigError(f"{path}: agent.prefer names the unknown agent {name!r}; the agents are: {_known()}")
    for name, settings in agents.items():
        if name not in DESCRIPTORS:
            raise ConfigError(f"{path}: [agents.{name}] is not a known agent; the agents are: {_known()}")
        descriptor = DESCRIPTORS[name]
        if settings.use_for is not None:
            if "\n" in settings.use_for or "\r" in settings.use_for:
                raise ConfigError(f"{path}: agents.{name}.use_for must be one line; join its lines")
            if len(settings.use_for.encode("utf-8")) > MAX_USE_FOR_BYTES:
                raise ConfigError(f"{path}: agents.{name}.use_for is over {MAX_USE_FOR_BYTES} bytes; shorten it")
        if settings.model is not None:
            if not descriptor.takes_model:
                raise ConfigError(f"{path}: agents.{name}.model is set, but {name} does not take a model; remove it")
            try:
                check_model(settings.model, f"agents.{name}.model")
            except RefusedError as err:
                raise ConfigError(f"{path}: {err}") from None
        if settings.effort is not None:
            if not descriptor.takes_effort:
                raise ConfigError(f"{path}: agents.{name}.effort is set, but {name} does not take an effort; "
                                  "remove it")
        _check_transport(name, descriptor, settings, path)
        _check_limits(name, descriptor, settings, path, prices or {})


def agent_limits(settings: "AgentSettings | None") -> Limits:
    if settings is None:
        return Limits()
    return Limits(max_turns=settings.max_turns, max_tokens=settings.max_tokens, max_cost_usd=settings.max_cost_usd)


def _check_limits(name: str, descriptor: "Descriptor", settings: AgentSettings, path: Path,
                  prices: "dict[str, Price]") -> None:
    """A token or USD limit on an agent whose stream cannot show it is refused now, not at a call."""
    from scv.core.limits import uncheckable
    # "auto" may run the ACP server (when installed): the call-time check, knowing which, is the exact one.
    acp = settings.transport == "acp" or (settings.transport == "auto" and descriptor.acp is not None
                                          and descriptor.output_format == "text")
    fmt = "nested" if descriptor.nested else "acp" if acp else descriptor.output_format
    why = uncheckable(agent_limits(settings), name, fmt, settings.model, prices)
    if why is not None:
        raise ConfigError(f"{path}: agents.{name}: {why}")


def _check_transport(name: str, descriptor: "Descriptor", settings: AgentSettings, path: Path) -> None:
    """`transport`, `command` and `args` (user-only keys, as every [agents.NAME] key is)."""
    from scv.core.agents.descriptors import ACP, RESUME
    if descriptor.nested:
        if settings.transport != "auto":
            raise ConfigError(f"{path}: agents.{name}.transport is set, but the nested SCV always runs scv server "
                              "--stdio and speaks SCV's own protocol; remove it")
        if settings.args is not None:
            raise ConfigError(f"{path}: agents.{name}.args is set, but the nested SCV always runs scv server --stdio; "
                              "remove it (command may name the scv to run)")
    elif settings.transport == ACP and descriptor.acp is None:
        raise ConfigError(f"{path}: agents.{name}.transport is \"acp\", but {name} has no Agent Client Protocol "
                          f"server; set \"{RESUME}\" or remove it")
    elif settings.transport == ACP and settings.command is not None:
        raise ConfigError(f"{path}: agents.{name}.command is set, but transport = \"acp\" never runs the CLI; "
                          "remove command, or set transport = \"auto\" to run that CLI")
    command = settings.command
    if command is not None:
        if not command.strip() or "\x00" in command or command != command.strip():
            raise ConfigError(f"{path}: agents.{name}.command must name an executable (a name looked up like the "
                              "built-in one, or an absolute path); fix the value")
        if "/" in command and not command.startswith("/"):
            raise ConfigError(f"{path}: agents.{name}.command {command!r} is a relative path; give an absolute path "
                              "or a name looked up in ~/.local/bin and on PATH")
    for arg in settings.args or ():
        if "\x00" in arg:
            raise ConfigError(f"{path}: agents.{name}.args holds a NUL byte; remove it")
