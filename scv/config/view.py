"""`scv config show`: the effective configuration, each value with where it came from (a default,
the user's file or the project's), built by walking the Config Structs themselves, so a key or
table added to a Struct appears here with no other change. Secrets never appear: a value whose
key reads like a key, token or password, and every value of a `headers` table, shows as `…`."""

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import msgspec

from scv.config.load import Config, load_config, project_config_path, read_config_file, user_config_path

MASK = "…"
DEFAULT, USER, PROJECT = "default", "user", "project"

# A key name that holds a secret: api_key, token, secret, password, ... as a whole word of the name
# (so `max_tokens` and `keep_days` are not), but not `*_env`, which names a variable, not its value.
_SECRET_NAME = re.compile(r"(^|[_-])(api[_-]?key|key|token|secret|password|passwd|credentials?|authorization|"
                          r"cookie|bearer)([_-]|$)", re.IGNORECASE)
# Tables whose every value is secret whatever its name (headers carry Authorization and such).
_SECRET_TABLES = frozenset({"headers"})
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
# A value that is key material whatever its key's name: the common API key and token prefixes.
_KEY_MATERIAL = re.compile(r"\b(sk|sk-ant|sk-proj|xai|ghp|gho|ghs|github_pat|glpat|AKIA|AIza)[-_][-_A-Za-z0-9]{8,}"
                           r"|\bBearer\s+\S+", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not name.lower().endswith("_env")


@dataclass(frozen=True)
class Setting:
    path: tuple[str, ...]       # ("providers", "relay", "api_key")
    value: Any                  # plain data, secrets already replaced by MASK
    source: str                 # DEFAULT, USER or PROJECT

    @property
    def key(self) -> str:
        return ".".join(key_part(part) for part in self.path)


def key_part(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def _masked_text(text: str) -> str:
    """A URL keeps its shape with a password and secret-named query values masked; anything that
    reads like key material is masked whole."""
    if text.lower().startswith(("http://", "https://")):
        try:
            parts = urlsplit(text)
            netloc = parts.netloc
            if parts.password is not None:
                netloc = f"{parts.username}:{MASK}@" + netloc.rpartition("@")[2]
            pairs = [pair.partition("=") for pair in parts.query.split("&")] if parts.query else []
            query = "&".join(name + eq + (MASK if eq and is_secret_name(unquote(name)) else value)
                             for name, eq, value in pairs)
            text = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
        except ValueError:
            return MASK
    return MASK if _KEY_MATERIAL.search(text) else text


def _masked(name: str, value: Any, secret: bool = False) -> Any:
    secret = secret or is_secret_name(name)
    if isinstance(value, dict):
        inner = secret or name in _SECRET_TABLES
        return {key: _masked(str(key), item, inner) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(name, item, secret) for item in value]
    if secret and value not in (None, ""):
        return MASK
    return _masked_text(value) if isinstance(value, str) else value


def _present(data: dict[str, Any], path: tuple[str, ...]) -> bool:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _walk(value: msgspec.Struct, path: tuple[str, ...], sources: list[tuple[str, dict]]) -> list[Setting]:
    found = []
    for field in msgspec.structs.fields(type(value)):
        here = path + (field.encode_name,)
        current = getattr(value, field.name)
        if isinstance(current, msgspec.Struct):
            found += _walk(current, here, sources)
        elif (isinstance(current, dict) and current
              and all(isinstance(item, msgspec.Struct) for item in current.values())):
            for name, item in current.items():      # a table of tables, such as [providers.NAME]
                found += _walk(item, here + (name,), sources)
        else:
            source = next((label for label, data in sources if _present(data, here)), DEFAULT)
            found.append(Setting(here, _masked(field.encode_name, msgspec.to_builtins(current)), source))
    return found


def settings_of(config: msgspec.Struct, user: dict[str, Any], project: dict[str, Any]) -> list[Setting]:
    """Every leaf of `config` (any Struct), in field order, with the file that set it."""
    return _walk(config, (), [(PROJECT, project), (USER, user)])


@dataclass
class ConfigFile:
    path: Path | None
    exists: bool

    def as_dict(self) -> dict:
        return {"path": str(self.path) if self.path else None, "exists": self.exists}


@dataclass
class ConfigView:
    user_file: ConfigFile
    project_file: ConfigFile
    settings: list[Setting]
    config: Config

    def nested(self) -> dict[str, Any]:
        """The effective configuration as tables, secrets masked."""
        out: dict[str, Any] = {}
        for setting in self.settings:
            table = out
            for part in setting.path[:-1]:
                table = table.setdefault(part, {})
            table[setting.path[-1]] = setting.value
        return out


def effective_config(workspace: Path | None, home: Path | None = None) -> ConfigView:
    """Validates as every session does (raising ConfigError), then says where each value came from."""
    config: Config = load_config(workspace, home)
    user_path = user_config_path(home)
    project_path = project_config_path(workspace) if workspace is not None else None
    user = read_config_file(user_path)
    project = read_config_file(project_path) if project_path is not None else {}
    return ConfigView(ConfigFile(user_path, user_path.is_file()),
                      ConfigFile(project_path, project_path is not None and project_path.is_file()),
                      settings_of(config, user, project), config)


def render_value(value: Any) -> str:
    """TOML-like, for people: strings quoted, a masked secret and an unset value plain."""
    if value is None:
        return "(unset)"
    if value == MASK:
        return MASK
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(render_value(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{key_part(str(k))} = {render_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value, ensure_ascii=False)


def render_settings(settings: list[Setting]) -> list[str]:
    lines: list[str] = []
    table: tuple[str, ...] | None = None
    # Top-level keys first: in TOML a key after a table header belongs to that table.
    for setting in sorted(settings, key=lambda s: len(s.path) > 1):
        here = setting.path[:-1]
        if here != table and here:
            lines.append("")
            lines.append("[" + ".".join(key_part(part) for part in here) + "]")
        table = here
        line = f"{key_part(setting.path[-1])} = {render_value(setting.value)}"
        lines.append(f"{line:<44} # {setting.source}")
    return lines
