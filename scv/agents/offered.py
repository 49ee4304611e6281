"""Which agents a session offers: those whose executable resolves when the session starts and,
for file-checked sign-ins, that are signed in. Decided once per session, so an agent installed
later appears in new sessions."""

import os
from dataclasses import dataclass
from pathlib import Path

from scv.agents.signin import signed_in
from scv.config import scv_home
from scv.agents.descriptors import DESCRIPTORS, Descriptor, resolve_executable


@dataclass(frozen=True)
class OfferedAgent:
    descriptor: Descriptor
    executable: str          # absolute, as resolved at session start


def discover(environ: dict[str, str] | None = None, home: Path | None = None) -> dict[str, OfferedAgent]:
    environ = dict(os.environ) if environ is None else environ
    user_home = Path(environ.get("HOME") or Path.home())
    state_home = home or scv_home()
    offered = {}
    for name, descriptor in DESCRIPTORS.items():
        executable = resolve_executable(descriptor, user_home, environ.get("PATH"))
        if executable is None:
            continue
        if descriptor.signin_checked_by_file and not signed_in(descriptor, state_home, environ):
            continue
        offered[name] = OfferedAgent(descriptor, executable)
    return offered
