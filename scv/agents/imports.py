"""`scv agents import codex`: a snapshot of the user's own Codex setup in Codex's private home.
`config.toml` is copied whole; `auth.json` only when it holds an API key (a ChatGPT sign-in's
rotating refresh token must stay in one home). Both are validated before either is written.
A digest of what was copied, never its content, goes to `$SCV_HOME/state/imports/codex.json`,
so `status` can say whether the source changed since."""

import hashlib
import json
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from scv.core.agents.descriptors import CODEX, DESCRIPTORS, state_dir
from scv.core.agents.environment import is_removed
from scv.core.errors import ScvError, UsageError
from scv.core.files import ensure_folder, write_atomic

CONFIG, AUTH = "config.toml", "auth.json"
REPORTED_KEYS = ("model", "model_provider", "model_reasoning_effort", "sandbox_mode", "approval_policy")


class ImportFailed(ScvError):
    exit_code = 1


def default_source(environ: dict[str, str]) -> Path:
    if environ.get("CODEX_HOME"):
        return Path(environ["CODEX_HOME"])
    return Path(environ.get("HOME") or Path.home()) / ".codex"


def records_folder(scv_home: Path) -> Path:
    return scv_home / "state" / "imports"


@dataclass
class CodexSetup:
    """What an import would copy from `source`, already validated."""
    source: Path
    config_bytes: bytes
    config: dict
    auth_bytes: bytes | None           # None: nothing to copy
    auth_note: str                     # why auth.json is or is not copied
    env_keys: list[tuple[str, str]] = field(default_factory=list)     # (provider, variable)

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for name, data in ((CONFIG, self.config_bytes), (AUTH, self.auth_bytes)):
            if data is not None:
                h.update(f"{name}\0{len(data)}\0".encode())
                h.update(data)
        return h.hexdigest()


def read_source(path: Path) -> bytes | None:
    """A file to import, or None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ImportFailed(f"could not read {path} ({err.strerror}); check its permissions") from None


def read_setup(source: Path) -> CodexSetup:
    if not source.is_dir():
        raise UsageError(f"{source} is not a folder; pass --from with your Codex folder (the one holding "
                         "config.toml)")
    config_bytes = read_source(source / CONFIG)
    if config_bytes is None:
        raise UsageError(f"{source} has no {CONFIG} to import; pass --from with your Codex folder")
    try:
        config = tomllib.loads(config_bytes.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ImportFailed(f"{source / CONFIG} is not valid TOML ({err}); fix it, then import again") from None
    auth_bytes = read_source(source / AUTH)
    auth_note = "no auth.json (nothing to copy)"
    copied_auth = None
    if auth_bytes is not None:
        try:
            auth = json.loads(auth_bytes)
        except ValueError:
            raise ImportFailed(f"{source / AUTH} is not valid JSON; fix it, then import again") from None
        if not isinstance(auth, dict):
            raise ImportFailed(f"{source / AUTH} does not hold a JSON object; fix it, then import again")
        has_key = isinstance(auth.get("OPENAI_API_KEY"), str) and bool(auth["OPENAI_API_KEY"])
        if auth.get("tokens"):
            auth_note = ("auth.json holds a ChatGPT sign-in, which is never copied (its refresh token must stay "
                         "in one home); use scv agents login codex for that")
        elif has_key:
            copied_auth = auth_bytes
            auth_note = "auth.json copied (it holds an API key)"
        else:
            auth_note = "auth.json holds no API key (not copied)"
    env_keys = []
    providers = config.get("model_providers")
    if isinstance(providers, dict):
        for name, provider in providers.items():
            if isinstance(provider, dict) and isinstance(provider.get("env_key"), str):
                env_keys.append((name, provider["env_key"]))
    return CodexSetup(source, config_bytes, config, copied_auth, auth_note, env_keys)


@dataclass
class ImportReport:
    destination: Path
    copied: list[str]
    settings: dict[str, str]
    auth_note: str
    warnings: list[str]


def import_codex(scv_home: Path, source: Path) -> ImportReport:
    setup = read_setup(source)
    destination = state_dir(scv_home, DESCRIPTORS[CODEX])
    ensure_folder(destination)
    write_atomic(destination / CONFIG, setup.config_bytes)
    copied = [CONFIG]
    if setup.auth_bytes is not None:
        write_atomic(destination / AUTH, setup.auth_bytes)
        copied.append(AUTH)
    record = {"agent": CODEX, "source": str(source.resolve()), "digest": setup.digest, "files": copied,
              "imported_at": int(time.time())}
    write_atomic(records_folder(scv_home) / f"{CODEX}.json", (json.dumps(record, indent=2) + "\n").encode())
    settings = {key: str(setup.config[key]) for key in REPORTED_KEYS if isinstance(setup.config.get(key), str)}
    warnings = []
    for provider, variable in setup.env_keys:
        why = ("SCV removes it from delegated agents" if is_removed(variable, DESCRIPTORS[CODEX])
               else "the SCV service does not load your shell profile, so it must be set where SCV starts")
        warnings.append(f"provider {provider!r} reads its key from the variable {variable} (env_key): {why}; "
                        "use experimental_bearer_token or requires_openai_auth with an API key in auth.json")
    return ImportReport(destination, copied, settings, setup.auth_note, warnings)


@dataclass
class ImportState:
    source: str
    up_to_date: bool
    detail: str           # "up to date" or what changed, with the command to run


def codex_digest_now(source: str) -> str:
    return read_setup(Path(source)).digest


def import_state(scv_home: Path, agent: str, digest_now: Callable[[str], str], rerun: str) -> ImportState | None:
    """The recorded import of `agent` compared with its source now (`digest_now(source)`, raising
    ScvError when the source cannot be read); None when there was none. `rerun` may use {source}."""
    try:
        record = json.loads((records_folder(scv_home) / f"{agent}.json").read_text(encoding="utf-8"))
        source = str(record["source"])
        digest = record["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    rerun = "run " + rerun.format(source=source) + " again"
    try:
        current = digest_now(source)
    except ScvError:
        return ImportState(source, False, f"the source is gone or unreadable since the import; {rerun}")
    if current == digest:
        return ImportState(source, True, "up to date")
    return ImportState(source, False, f"the source has changed since the import; {rerun}")
