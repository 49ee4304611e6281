"""Which agents a session offers, and on which backend: those whose executable (the CLI, or the
ACP server, or `scv`) resolves when the session starts and, for file-checked sign-ins, that are
signed in. Decided once per session, so an agent installed later appears in new sessions."""

import os
import sys
from pathlib import Path

import msgspec

from scv.agents.signin import signed_in
from scv.agents.transport import Choice, choose
from scv.config.load import AgentSettings, scv_home
from scv.core.agents.descriptors import ACP, DESCRIPTORS, NESTED, RESUME, Descriptor, resolve_executable

# The backends the `agent` tool runs (scv/tools/agent/): the CLI once per turn, an ACP server
# or a nested SCV for a whole conversation.
AVAILABLE_BACKENDS = frozenset({RESUME, ACP, NESTED})

# The running SCV, for a nested SCV when no `scv` executable is installed (a checkout's bin/scv).
RUNNING_SCV = (sys.executable, "-m", "scv")


class OfferedAgent(msgspec.Struct, frozen=True):
    descriptor: Descriptor
    executable: str          # absolute, as resolved at session start (the CLI, the ACP server, or scv)
    choice: Choice | None = None

    @property
    def transport(self) -> str:
        return self.choice.transport if self.choice is not None else RESUME

    def takes(self, option: str) -> bool:
        """Whether a call may set `option` (model, effort, session) on this agent's backend: every
        agent over ACP continues a conversation; model and effort follow the agent's adapter."""
        if option == "session":
            return self.descriptor.takes_session_on(self.transport)
        return bool(getattr(self.descriptor, f"takes_{option}"))


def discover(environ: dict[str, str] | None = None, home: Path | None = None,
             settings: dict[str, AgentSettings] | None = None,
             backends: frozenset[str] = AVAILABLE_BACKENDS) -> dict[str, OfferedAgent]:
    environ = dict(os.environ) if environ is None else environ
    user_home = Path(environ.get("HOME") or Path.home())
    state_home = home or scv_home()
    settings = settings or {}

    def resolve(descriptor: Descriptor, name: str) -> str | None:
        return resolve_executable(descriptor, user_home, environ.get("PATH"), name)

    offered = {}
    for name, descriptor in DESCRIPTORS.items():
        own = settings.get(name) or AgentSettings()
        choice = choose(descriptor, transport=own.transport, command=own.command, args=own.args, resolve=resolve,
                        running_scv=RUNNING_SCV, backends=backends)
        if choice is None:
            continue
        if descriptor.signin_checked_by_file and not signed_in(descriptor, state_home, environ):
            continue
        if choice.transport == RESUME and own.args is not None:
            # The user's own fixed arguments replace the built-in ones in every argument vector.
            descriptor = msgspec.structs.replace(descriptor, fixed_args=tuple(own.args))
        offered[name] = OfferedAgent(descriptor, choice.executable, choice)
    return offered
