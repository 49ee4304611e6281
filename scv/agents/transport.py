"""Which backend runs an agent, and with what command: the pure decision behind "which agents does
this session offer, and how".

`[agents.<name>] transport`: `auto` (the default) runs the agent's ACP server when it resolves (in
the user's per-user install folders or on PATH) and the agent's `command` is the built-in one,
and otherwise its CLI once per turn; `acp` requires the server and offers the agent only when it
is installed; `resume` always runs the CLI once per turn. A custom `command` points SCV at one
specific CLI, which the ACP server would not run, so `auto` keeps that CLI; custom `args` do not
matter to the choice. The nested SCV runs `scv server --stdio` from the `scv` on PATH or in
~/.local/bin, or else the SCV that is running.
"""

from typing import Callable

import msgspec

from scv.core.agents.descriptors import ACP, NESTED, RESUME, Descriptor

# Resolves an executable name (or an absolute path) for a descriptor; None when it does not resolve.
Resolver = Callable[[Descriptor, str], str | None]

LIVE_BACKENDS = frozenset({ACP, NESTED})


class Choice(msgspec.Struct, frozen=True):
    transport: str                  # resume | acp | scv
    argv: tuple[str, ...]           # resume: the CLI and its fixed args; acp/scv: the server's command line
    # Under permissions = "full" (ACP servers whose switch is an argument, such as grok's).
    full_argv: tuple[str, ...] | None = None

    @property
    def executable(self) -> str:
        return self.argv[0]


def choose(descriptor: Descriptor, *, transport: str = "auto", command: str | None = None,
           args: list[str] | None = None, resolve: Resolver, running_scv: tuple[str, ...],
           backends: frozenset[str] = frozenset({RESUME}) | LIVE_BACKENDS) -> Choice | None:
    """The backend and command line for one agent, or None when the session does not offer it.
    `backends` are the ones this SCV can run (a missing live backend falls back as if its server
    were not installed)."""
    if descriptor.nested:
        if NESTED not in backends:
            return None
        found = resolve(descriptor, command or descriptor.executable)
        if found is None and command is not None:
            return None                 # the user named an scv that is not there: say nothing else runs
        prefix = (found,) if found else running_scv
        return Choice(NESTED, (*prefix, *descriptor.fixed_args))
    server = descriptor.acp
    if transport != RESUME and server is not None and ACP in backends and (transport == ACP or command is None):
        found = resolve(descriptor, server.executable)
        if found is not None:
            full = tuple(server.argv(found, True)) if server.full_permission_args is not None else None
            return Choice(ACP, tuple(server.argv(found, False)), full)
    if transport == ACP:
        return None                     # required, and not installed (or not runnable here)
    found = resolve(descriptor, command or descriptor.executable)
    if found is None:
        return None
    return Choice(RESUME, (found, *(args if args is not None else descriptor.fixed_args)))
