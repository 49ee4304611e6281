"""Validation of the user's `[agent]` delegation keys and `[agents.NAME]` tables, which types
alone cannot express: known agent names, one-line `use_for` notes, and `model`/`effort` only on
agents that take them. (A project config cannot set these keys at all: see scv/config.py.)"""

from pathlib import Path

from scv.agents.options import EFFORTS, check_model
from scv.config import AgentSettings, Config
from scv.errors import ConfigError, RefusedError
from scv.agents.descriptors import ACP, DESCRIPTORS, RESUME, Descriptor

MAX_USE_FOR_BYTES = 500


def _known() -> str:
    return ", ".join(DESCRIPTORS)


def check_agent_settings(config: Config, path: Path) -> None:
    for name in config.agent.prefer:
        if name not in DESCRIPTORS:
            raise ConfigError(f"{path}: agent.prefer names the unknown agent {name!r}; the agents are: {_known()}")
    for name, settings in config.agents.items():
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
            if settings.effort not in EFFORTS:
                raise ConfigError(f"{path}: agents.{name}.effort {settings.effort!r} is not one of "
                                  f"{', '.join(EFFORTS)}; pick one")
        _check_transport(name, descriptor, settings, path)
        if settings.permissions not in ("default", "full"):
            raise ConfigError(f"{path}: agents.{name}.permissions {settings.permissions!r} is not \"default\" or "
                              "\"full\"; pick one")


def _check_transport(name: str, descriptor: Descriptor, settings: AgentSettings, path: Path) -> None:
    """`transport`, `command` and `args` (user-only keys, as every [agents.NAME] key is)."""
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
