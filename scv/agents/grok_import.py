"""`scv agents import grok`: the user's own Grok `config.toml` (model profiles, keys) merged into
Grok's private SCV home by top-level table. The user's tables win; tables only SCV's copy has (such
as the `[marketplace]` state Grok writes there) are kept. `auth.json` sign-ins are never copied: a
`grok login` token must stay in one home. A digest of the user's file, never its content, goes to
`$SCV_HOME/state/imports/grok.json` so `status` can say whether it changed since."""

import hashlib
import json
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from scv.agents.imports import ImportFailed, records_folder, read_source as _read
from scv.agents.login import prepare_private_home
from scv.agents.toml_merge import MergeRefused, merge
from scv.core.agents.descriptors import DESCRIPTORS, GROK, state_dir
from scv.core.agents.environment import is_removed
from scv.core.errors import UsageError
from scv.core.files import write_atomic

CONFIG = "config.toml"
RERUN = "scv agents import grok --from {source}"


def default_source(environ: dict[str, str]) -> Path:
    if environ.get("GROK_HOME"):
        return Path(environ["GROK_HOME"])
    return Path(environ.get("HOME") or Path.home()) / ".grok"


def destination(scv_home: Path) -> Path:
    return state_dir(scv_home, DESCRIPTORS[GROK]) / CONFIG


def _toml_text(path: Path, data: bytes, advice: str) -> str:
    try:
        text = data.decode("utf-8")
        tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ImportFailed(f"{path} is not valid TOML ({err}); {advice}") from None
    return text


def read_source(source: Path) -> bytes:
    if not source.is_dir():
        raise UsageError(f"{source} is not a folder; pass --from with your Grok folder (the one holding config.toml)")
    data = _read(source / CONFIG)
    if data is None:
        raise UsageError(f"{source} has no {CONFIG} to import; pass --from with your Grok folder")
    return data


def digest_of(data: bytes) -> str:
    h = hashlib.sha256()
    h.update(f"{CONFIG}\0{len(data)}\0".encode())
    h.update(data)
    return h.hexdigest()


def current_digest(source: str) -> str:
    return digest_of(read_source(Path(source)))


@dataclass
class Profile:
    name: str
    model: str
    key: str                 # where its key comes from, never the key
    default: bool


@dataclass
class GrokImport:
    source: Path
    destination: Path
    kept: list[str]          # top-level tables kept from SCV's copy
    default_model: str | None
    profiles: list[Profile]
    warnings: list[str]
    auth_note: str | None


def _profiles(config: dict) -> tuple[str | None, list[Profile], list[str]]:
    """Read as Grok's sign-in check reads it (scv/agents/signin.py): `[models] default` and the
    profiles under `[models]`, matched by catalog key or model id."""
    models = config.get("models")
    if not isinstance(models, dict):
        return None, [], []
    default = models.get("default") if isinstance(models.get("default"), str) else None
    profiles, warnings = [], []
    for name, profile in models.items():
        if not isinstance(profile, dict):
            continue
        model = next((profile[k] for k in ("id", "model") if isinstance(profile.get(k), str)), name)
        env_key = profile.get("env_key")
        if isinstance(profile.get("api_key"), str) and profile["api_key"]:
            key = "API key in config"
        elif isinstance(env_key, str) and env_key:
            key = f"key from ${env_key} (env_key)"
            why = ("SCV removes it from delegated agents" if is_removed(env_key, DESCRIPTORS[GROK])
                   else "the SCV service does not load your shell profile, so it must be set where SCV starts")
            warnings.append(f"profile {name!r} reads its key from the variable {env_key} (env_key): {why}; "
                            "put api_key in that profile or use scv agents login grok")
        else:
            key = "no key in config"
        is_default = default is not None and default in (name, profile.get("id"), profile.get("model"))
        profiles.append(Profile(name, model, key, is_default))
    return default, profiles, warnings


def import_grok(scv_home: Path, source: Path) -> GrokImport:
    user_bytes = read_source(source)
    user_text = _toml_text(source / CONFIG, user_bytes, "fix it, then import again")
    target = destination(scv_home)
    scv_bytes = _read(target)
    scv_text = None if scv_bytes is None else _toml_text(
        target, scv_bytes, "remove it to import your config as it is, then import again")
    try:
        merged_text, merged, kept = merge(user_text, scv_text)
    except MergeRefused as err:
        raise ImportFailed(f"merging your {CONFIG} with SCV's copy at {target} was refused because {err}; nothing "
                           "was written; remove SCV's copy to import yours as it is") from None
    prepare_private_home(scv_home, DESCRIPTORS[GROK])
    write_atomic(target, merged_text.encode("utf-8"))
    record = {"agent": GROK, "source": str(source.resolve()), "digest": digest_of(user_bytes), "files": [CONFIG],
              "imported_at": int(time.time())}
    write_atomic(records_folder(scv_home) / f"{GROK}.json", (json.dumps(record, indent=2) + "\n").encode())
    default, profiles, warnings = _profiles(merged)
    auth_note = None
    if (source / "auth.json").exists():
        auth_note = ("your auth.json (a grok login sign-in) is never copied (its token must stay in one home); "
                     "use scv agents login grok for that")
    return GrokImport(source, target, kept, default, profiles, warnings, auth_note)
