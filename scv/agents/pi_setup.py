"""pi's own files in its private `.pi/agent` folder: an OpenAI-compatible provider named `scv` in
`models.json`, its key in `auth.json`, and the defaults in `settings.json`. Other providers and
settings in those files are kept; every file is written atomically with mode 0600."""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from scv.core.agents.descriptors import DESCRIPTORS, PI, state_dir
from scv.core.errors import ScvError, UsageError
from scv.core.files import write_atomic

PROVIDER = "scv"
WIRE_APIS = {"responses": "openai-responses", "chat": "openai-completions"}
MODELS, AUTH, SETTINGS = "models.json", "auth.json", "settings.json"


class UnreadableFile(ScvError):
    exit_code = 1


def folder(scv_home: Path) -> Path:
    return state_dir(scv_home, DESCRIPTORS[PI])


def check_base_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError("the base URL must start with http:// or https:// and name a host, such as "
                         "https://relay.example/v1")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise UsageError("the base URL must not carry a user, password, query or fragment; give the key when "
                         "asked for it")
    return value.strip().rstrip("/")


def check_wire_api(value: str) -> str:
    value = value.strip()
    if value not in WIRE_APIS:
        raise UsageError(f"the wire API must be one of: {', '.join(WIRE_APIS)} (got {value!r})")
    return value


def check_model(value: str) -> str:
    value = value.strip()
    if not value or any(ch.isspace() or not ch.isprintable() for ch in value) or len(value) > 200:
        raise UsageError("the model must be one model id without spaces, such as gpt-5.5")
    return value


def _read_object(path: Path) -> dict:
    """A JSON object file; a missing one is empty. A broken one stops SCV before it writes anything."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise UnreadableFile(f"{path} is not readable JSON ({err}); fix or remove it, then run this again") from None
    if not isinstance(data, dict):
        raise UnreadableFile(f"{path} does not hold a JSON object; fix or remove it, then run this again")
    return data


def _write(path: Path, data: dict) -> None:
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode())


def configure(scv_home: Path, *, base_url: str, wire_api: str, model: str, key: str) -> None:
    """Points pi at an OpenAI-compatible endpoint as provider `scv`, its default."""
    here = folder(scv_home)
    models, auth, settings = (_read_object(here / name) for name in (MODELS, AUTH, SETTINGS))
    providers = models.setdefault("providers", {})
    if not isinstance(providers, dict):
        raise UnreadableFile(f"{here / MODELS} has a \"providers\" value that is not an object; fix or remove it")
    entry: dict = {"baseUrl": base_url, "api": WIRE_APIS[wire_api], "models": [{"id": model}]}
    if wire_api == "responses":
        # pi's default session_id header is refused by proxies that reject underscores in header names.
        entry["compat"] = {"sessionAffinityFormat": "openai-nosession"}
    providers[PROVIDER] = entry
    auth[PROVIDER] = {"type": "api_key", "key": key}
    settings["defaultProvider"] = PROVIDER
    settings["defaultModel"] = model
    _write(here / MODELS, models)
    _write(here / AUTH, auth)
    _write(here / SETTINGS, settings)


def remove(scv_home: Path) -> list[str]:
    """`logout`: auth.json, the `scv` provider, and a default pointing at it. Says what it removed."""
    here = folder(scv_home)
    removed = []
    models, settings = _read_object(here / MODELS), _read_object(here / SETTINGS)
    try:
        os.unlink(here / AUTH)
        removed.append("stored sign-ins (auth.json)")
    except FileNotFoundError:
        pass
    except OSError as err:
        raise UnreadableFile(f"could not remove {here / AUTH} ({err.strerror})") from None
    providers = models.get("providers")
    if isinstance(providers, dict) and PROVIDER in providers:
        del providers[PROVIDER]
        _write(here / MODELS, models)
        removed.append(f"provider {PROVIDER} (models.json)")
    if settings.get("defaultProvider") == PROVIDER:
        settings.pop("defaultProvider")
        settings.pop("defaultModel", None)
        _write(here / SETTINGS, settings)
        removed.append("the default pointing at it (settings.json)")
    return removed


@dataclass
class PiState:
    provider: str | None = None
    model: str | None = None
    api: str | None = None
    host: str | None = None
    stored: list[str] = field(default_factory=list)     # providers with a stored sign-in


def _quiet_object(path: Path) -> dict:
    try:
        return _read_object(path)
    except UnreadableFile:
        return {}


def describe(scv_home: Path) -> PiState:
    """What `status` shows: names, hosts and which providers have a key, never a key."""
    here = folder(scv_home)
    models, auth, settings = (_quiet_object(here / name) for name in (MODELS, AUTH, SETTINGS))
    state = PiState()
    provider, model = settings.get("defaultProvider"), settings.get("defaultModel")
    state.provider = provider if isinstance(provider, str) else None
    state.model = model if isinstance(model, str) else None
    providers = models.get("providers") if isinstance(models.get("providers"), dict) else {}
    entry = providers.get(state.provider) if state.provider else None
    if isinstance(entry, dict):
        state.api = entry.get("api") if isinstance(entry.get("api"), str) else None
        base = entry.get("baseUrl")
        state.host = (urlsplit(base).hostname or None) if isinstance(base, str) else None
    stored = {name for name, value in auth.items() if isinstance(value, dict) and value}
    stored |= {name for name, value in providers.items()
               if isinstance(value, dict) and isinstance(value.get("apiKey"), str) and value["apiKey"]}
    state.stored = sorted(stored)
    return state
