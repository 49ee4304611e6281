"""Sign-in checks SCV makes by reading a local file in an agent's private home (Grok, DeepSeek
Harness, pi, the nested SCV). Only whether a credential is stored is reported, never its value. Claude Code and
Codex report sign-in only through their own CLI, too slow for every session start."""

import os
from pathlib import Path

from scv.core.agents.descriptors import DSH, GROK, PI, SCV, Descriptor, state_dir
from scv.core.agents.environment import is_removed


def _read_json(path: Path) -> object:
    import json     # only for an agent whose CLI is installed: discovery alone does not load it
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def grok_login_stored(folder: Path) -> bool:
    """A `grok login` sign-in in `auth.json`."""
    auth = _read_json(folder / "auth.json")
    return isinstance(auth, dict) and bool(auth)


def grok_config_model(folder: Path, descriptor: Descriptor, environ: dict[str, str]) -> str | None:
    """The `[models] default` of `config.toml` when its profile holds a usable API key, else None."""
    try:
        config = _toml((folder / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    models = config.get("models")
    if not isinstance(models, dict) or not isinstance(models.get("default"), str):
        return None
    default = models["default"]
    for key, profile in models.items():
        if not isinstance(profile, dict):
            continue
        if key != default and profile.get("id") != default and profile.get("model") != default:
            continue
        if isinstance(profile.get("api_key"), str) and profile["api_key"]:
            return default
        env_key = profile.get("env_key")
        if isinstance(env_key, str) and environ.get(env_key) and not is_removed(env_key, descriptor):
            return default
    return None


def _grok(folder: Path, descriptor: Descriptor, environ: dict[str, str]) -> bool:
    return grok_login_stored(folder) or grok_config_model(folder, descriptor, environ) is not None


_EMPTY_YAML = ("", '""', "''", "~", "null")


def dsh_key_stored(folder: Path) -> bool:
    """A non-empty `refs.DEEPSEEK_API_KEY` in `.credentials.yaml` (block or flow style)."""
    try:
        text = (folder / ".credentials.yaml").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    in_refs = False
    for line in text.splitlines():
        body = line.split(" #", 1)[0].rstrip()
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            key, _, rest = body.partition(":")
            in_refs = key.strip() == "refs"
            rest = rest.strip()
            if in_refs and rest.startswith("{") and rest.endswith("}"):
                for pair in rest[1:-1].split(","):
                    name, _, value = pair.partition(":")
                    if name.strip() == "DEEPSEEK_API_KEY" and value.strip() not in _EMPTY_YAML:
                        return True
            continue
        if in_refs:
            name, _, value = body.strip().partition(":")
            if name.strip() == "DEEPSEEK_API_KEY" and value.strip() not in _EMPTY_YAML:
                return True
    return False


def _pi(folder: Path) -> bool:
    auth = _read_json(folder / "auth.json")
    if isinstance(auth, dict) and any(isinstance(entry, dict) and entry for entry in auth.values()):
        return True
    models = _read_json(folder / "models.json")
    providers = models.get("providers") if isinstance(models, dict) else None
    if isinstance(providers, dict):
        return any(isinstance(p, dict) and isinstance(p.get("apiKey"), str) and p["apiKey"] for p in providers.values())
    return False


def nested_provider(folder: Path) -> dict | None:
    """The nested SCV's active provider profile in its own config.toml (what `scv agents import scv`
    writes), or None when it has none."""
    try:
        config = _toml((folder / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = config.get("provider", {}).get("active") if isinstance(config.get("provider"), dict) else None
    providers = config.get("providers")
    if not isinstance(active, str) or not isinstance(providers, dict) or not isinstance(providers.get(active), dict):
        return None
    return providers[active]


def signed_in(descriptor: Descriptor, scv_home: Path, environ: dict[str, str] | None = None) -> bool:
    """True when a credential is stored (or when SCV cannot check without running the CLI)."""
    folder = state_dir(scv_home, descriptor)
    if descriptor.name == GROK:
        return _grok(folder, descriptor, dict(os.environ) if environ is None else environ)
    if descriptor.name == DSH:
        return dsh_key_stored(folder)
    if descriptor.name == PI:
        return _pi(folder)
    if descriptor.name == SCV:
        return nested_provider(folder) is not None
    return True


def _toml(text: str) -> dict:
    import tomllib      # late: a session start with no agent config to read loads no TOML parser
    return tomllib.loads(text)
