"""`scv agents import pi --from-scv-provider`: pi gets SCV's own active provider (base URL, wire
API, model and key) as its provider `scv`. The key is resolved now, from `api_key` or the
`api_key_env` variable, because delegated agents never inherit key variables."""

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from scv.agents import pi_setup, scv_import
from scv.agents.imports import records_folder
from scv.core.files import write_atomic

AGENT = "pi"
SOURCE = "SCV's active provider"


@dataclass
class ScvProvider:
    name: str
    base_url: str
    wire_api: str
    model: str
    key: str

    @property
    def digest(self) -> str:
        fields = [self.name, self.base_url, self.wire_api, self.model, self.key]
        return hashlib.sha256("\0".join(fields).encode()).hexdigest()


def active_provider(scv_home: Path, environ: dict[str, str]) -> ScvProvider:
    found = scv_import.active_provider(scv_home, environ, "pi")
    profile = found.profile
    return ScvProvider(found.name, pi_setup.check_base_url(profile.base_url), profile.wire_api, profile.model,
                       found.key)


def import_scv_provider(scv_home: Path, environ: dict[str, str]) -> ScvProvider:
    provider = active_provider(scv_home, environ)
    pi_setup.configure(scv_home, base_url=provider.base_url, wire_api=provider.wire_api, model=provider.model,
                       key=provider.key)
    record = {"agent": AGENT, "source": SOURCE, "digest": provider.digest, "imported_at": int(time.time())}
    write_atomic(records_folder(scv_home) / f"{AGENT}.json", (json.dumps(record, indent=2) + "\n").encode())
    return provider


def current_digest(scv_home: Path) -> str:
    return active_provider(scv_home, dict(os.environ)).digest
