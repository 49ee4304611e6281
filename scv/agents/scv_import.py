"""`scv agents import scv` (and `login scv`): the nested SCV behind the `scv` agent gets a copy of
SCV's own active provider in its private home, `$SCV_HOME/agents/scv/config.toml`: `[provider]
active = "scv"` and a `[providers.scv]` profile with the same kind, wire API, model, base URL,
timeout and headers, plus `[web] search = "provider"` when SCV's own config uses hosted search.

The key is resolved now, from `api_key` or the `api_key_env` variable, and stored in that file,
because delegated agents never inherit key variables; it is never printed. The file is written
atomically with mode 0600; other top-level tables already in it are kept, and a file that cannot
be read or parsed is left untouched. A digest of what was copied (never the content) is recorded
in `$SCV_HOME/state/imports/scv.json`, so `status` can say whether SCV's provider changed since.
"""

import hashlib
import json
import os
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from scv.agents.imports import ImportFailed, records_folder
from scv.agents.signin import nested_provider
from scv.agents.toml_merge import MergeRefused, merge
from scv.config.load import Config, ProviderProfile, load_config
from scv.core.agents.descriptors import DESCRIPTORS, SCV, state_dir
from scv.core.errors import ConfigError
from scv.core.files import ensure_folder, write_atomic

CONFIG = "config.toml"
PROVIDER = "scv"
SOURCE = "SCV's active provider"
RERUN = "scv agents import scv"


@dataclass
class ActiveProvider:
    """SCV's own active provider with its key resolved (never printed)."""
    name: str
    profile: ProviderProfile
    key: str
    hosted_search: bool

    @property
    def digest(self) -> str:
        copied = {"kind": self.profile.kind, "wire_api": self.profile.wire_api, "model": self.profile.model,
                  "base_url": self.profile.endpoint, "timeout": self.profile.timeout,
                  "headers": self.profile.headers, "key": self.key, "hosted_search": self.hosted_search}
        return hashlib.sha256(json.dumps(copied, sort_keys=True).encode()).hexdigest()

    @property
    def host(self) -> str:
        return urlsplit(self.profile.endpoint).hostname or self.profile.endpoint


def active_provider(scv_home: Path, environ: dict[str, str], needs_key_for: str) -> ActiveProvider:
    """SCV's `[provider] active` profile, its model and its key; ConfigError naming what is missing."""
    config = load_config(None, scv_home)
    name = config.provider.active
    profile = config.providers.get(name) if name else None
    if profile is None:
        raise ConfigError("SCV has no active provider to import; set [provider] active and its [providers.NAME] "
                          "table in $SCV_HOME/config.toml first")
    if not profile.model:
        raise ConfigError(f"providers.{name} names no model; set providers.{name}.model, then import again")
    if profile.api_key_env:
        key = environ.get(profile.api_key_env, "")
        if not key:
            raise ConfigError(f"providers.{name}.api_key_env names {profile.api_key_env}, which is not set here; "
                              f"export it in this shell, then import again")
    else:
        key = profile.api_key or ""
    if not key:
        raise ConfigError(f"providers.{name} has no api_key or api_key_env; {needs_key_for} needs a key for the "
                          "endpoint")
    return ActiveProvider(name, profile, key, config.web.search == "provider")


def _toml_string(text: str) -> str:
    """A TOML basic string: backslash, quote and control characters escaped."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render(provider: ActiveProvider) -> str:
    profile = provider.profile
    headers = ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in profile.headers.items())
    lines = ["# Written by `scv agents import scv`: a copy of SCV's active provider. Re-run it after changing",
             "# that provider.", "[provider]", f"active = {_toml_string(PROVIDER)}", "",
             f"[providers.{PROVIDER}]", f"kind = {_toml_string(profile.kind)}",
             f"wire_api = {_toml_string(profile.wire_api)}", f"model = {_toml_string(profile.model or '')}",
             f"base_url = {_toml_string(profile.endpoint)}", f"max_tokens = {profile.max_tokens}", f"timeout = {float(profile.timeout)!r}",
             f"headers = {{ {headers} }}" if headers else "headers = {}",
             f"api_key = {_toml_string(provider.key)}"]
    if provider.hosted_search:
        lines += ["", "[web]", 'search = "provider"']
    return "\n".join(lines) + "\n"


def destination(scv_home: Path) -> Path:
    return state_dir(scv_home, DESCRIPTORS[SCV]) / CONFIG


def _existing(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ImportFailed(f"{path} cannot be read ({err.strerror}); it was left untouched: fix its permissions "
                           "or remove it, then import again") from None
    try:
        text = data.decode("utf-8")
        tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ImportFailed(f"{path} is not valid TOML ({err}); it was left untouched: fix or remove it, then import "
                           "again") from None
    return text


@dataclass
class ScvImport:
    provider: ActiveProvider
    destination: Path
    kept: list[str]


def import_scv(scv_home: Path, environ: dict[str, str]) -> ScvImport:
    provider = active_provider(scv_home, environ, "the nested SCV")
    path = destination(scv_home)
    ours = render(provider)
    try:
        text, parsed, kept = merge(ours, _existing(path))
    except MergeRefused as err:
        raise ImportFailed(f"{path} could not be merged with SCV's provider ({err}); it was left untouched") from None
    try:
        msgspec.convert(parsed, Config)     # the nested SCV must be able to read what is written
    except msgspec.ValidationError as err:
        raise ImportFailed(f"{path} would not be a valid SCV configuration after the import ({err}); it was left "
                           "untouched: fix or remove it, then import again") from None
    ensure_folder(path.parent)
    write_atomic(path, text.encode("utf-8"))
    record = {"agent": SCV, "source": SOURCE, "digest": provider.digest, "imported_at": int(time.time())}
    write_atomic(records_folder(scv_home) / f"{SCV}.json", (json.dumps(record, indent=2) + "\n").encode())
    return ScvImport(provider, path, kept)


def current_digest(scv_home: Path) -> str:
    return active_provider(scv_home, dict(os.environ), "the nested SCV").digest


def remove(scv_home: Path) -> bool:
    """`logout scv`: removes the nested SCV's config.toml (and the import record)."""
    try:
        os.unlink(destination(scv_home))
    except FileNotFoundError:
        return False
    except OSError as err:
        raise ImportFailed(f"could not remove {destination(scv_home)} ({err.strerror})") from None
    try:
        os.unlink(records_folder(scv_home) / f"{SCV}.json")
    except FileNotFoundError:
        pass
    return True


def describe(scv_home: Path) -> tuple[bool, str]:
    """What `status` shows: the provider, model and endpoint host, never the key."""
    profile = nested_provider(state_dir(scv_home, DESCRIPTORS[SCV]))
    if profile is None:
        return False, "signed out"
    parts = []
    kind, wire = profile.get("kind", "openai"), profile.get("wire_api", "responses")
    if isinstance(kind, str) and isinstance(wire, str):
        parts.append(f"provider {kind} ({wire} API)")
    if isinstance(profile.get("model"), str):
        parts.append(f"model {profile['model']}")
    base = profile.get("base_url")
    host = urlsplit(base).hostname if isinstance(base, str) else None
    if host:
        parts.append(f"host {host}")
    return True, "signed in" + (f" ({'; '.join(parts)})" if parts else "")
