"""Running an agent's own sign-in commands (`claude auth login`, `codex login`, `grok login`, their
logout and status commands) with exactly the private home and cleaned environment that delegated
runs of that agent use, so the credentials the CLI writes are the ones its delegated runs read."""

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from scv.core import stopping
from scv.core.agents.descriptors import (CLAUDE, CODEX, DESCRIPTORS, GROK, Descriptor, agent_home,
                                         resolve_executable, state_dir)
from scv.core.agents.environment import build_environment
from scv.core.errors import ScvError, UsageError
from scv.core.files import ensure_folder
from scv.core.lineage import DEPTH_VARIABLE, PARENT_VARIABLE
from scv.core.oscalls import REAL

# The agent's own commands, after its executable.
LOGIN_ARGS = {CLAUDE: ("auth", "login"), CODEX: ("login",), GROK: ("login",)}
LOGOUT_ARGS = {CLAUDE: ("auth", "logout"), CODEX: ("logout",), GROK: ("logout",)}
STATUS_ARGS = {CLAUDE: ("auth", "status"), CODEX: ("login", "status")}
STATUS_TIMEOUT_SECONDS = 30


class NotInstalled(ScvError):
    exit_code = 1


class StatusFailed(ScvError):
    exit_code = 1


def descriptor_for(name: str) -> Descriptor:
    descriptor = DESCRIPTORS.get(name)
    if descriptor is None:
        raise UsageError(f"unknown agent {name!r}; choose one of: {', '.join(DESCRIPTORS)}")
    return descriptor


def executable_for(descriptor: Descriptor, environ: dict[str, str]) -> str | None:
    """Resolved as a session resolves it: the user's per-user install folders, then PATH."""
    user_home = Path(environ.get("HOME") or Path.home())
    return resolve_executable(descriptor, user_home, environ.get("PATH"))


def require_executable(descriptor: Descriptor, environ: dict[str, str]) -> str:
    executable = executable_for(descriptor, environ)
    if executable is None:
        folders = ", ".join(f"~/{sub}" for sub in descriptor.search_dirs)
        raise NotInstalled(f"{descriptor.name} is not installed: no {descriptor.executable} executable in {folders} "
                           "or on PATH; install it first")
    return executable


def prepare_private_home(scv_home: Path, descriptor: Descriptor) -> Path:
    """The private home and the agent's state folder, mode 0700 (also when they already existed)."""
    home = agent_home(scv_home, descriptor.name)
    ensure_folder(home)
    ensure_folder(state_dir(scv_home, descriptor))
    return home


def signin_environment(descriptor: Descriptor, inherited: dict[str, str], scv_home: Path) -> dict[str, str]:
    """The environment of a delegated run of this agent (default permissions), without the
    delegation tags: a sign-in is not a delegated run, so an inherited tag is kept as it was."""
    env = build_environment(descriptor, inherited, scv_home, parent="signin", depth=0, full_permissions=False)
    for name in (PARENT_VARIABLE, DEPTH_VARIABLE):
        if name in inherited:
            env[name] = inherited[name]
        else:
            env.pop(name, None)
    return env


def exit_status(returncode: int) -> int:
    """A child killed by a signal ends us the way a shell reports it (128 + signal)."""
    return 128 - returncode if returncode < 0 else returncode


def run_attached(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    """Runs the agent with the terminal attached (stdin, stdout and stderr inherited) for browser
    and device-code flows. Ctrl-C reaches the agent through the terminal; SCV itself waits."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            child = subprocess.Popen(argv, env=env, cwd=cwd, restore_signals=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        except OSError as err:
            raise NotInstalled(f"{argv[0]} could not start ({err.strerror}); check the installation") from None
        return exit_status(child.wait())
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class Captured:
    returncode: int
    stdout: str
    stderr: str


def run_captured(argv: list[str], env: dict[str, str], cwd: Path) -> Captured:
    """Runs a status command with stdin from /dev/null, in its own process group, bounded in time.
    Its output is only ever summarized, never printed (it can name an account or part of a key)."""
    try:
        child = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True)
    except OSError as err:
        raise StatusFailed(f"{argv[0]} could not start ({err.strerror}); check the installation") from None
    try:
        out, err = child.communicate(timeout=STATUS_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        # A deadline: KILL at once, to the group and to descendants that left it.
        stopping.stop(REAL, group=child.pid, find=lambda: REAL.descendants(child.pid), immediate=True)
        # Not communicate(): a descendant that left the group could hold the pipes open forever.
        child.wait()
        child.stdout.close()
        child.stderr.close()
        raise StatusFailed(f"{' '.join(argv[1:])} did not answer within {STATUS_TIMEOUT_SECONDS} seconds") from None
    return Captured(child.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def run_own_command(name: str, table: dict[str, tuple[str, ...]], extra: tuple[str, ...], scv_home: Path,
                    environ: dict[str, str]) -> int:
    """`login`/`logout` through the agent's own CLI; its exit status becomes ours."""
    descriptor = descriptor_for(name)
    executable = require_executable(descriptor, environ)
    home = prepare_private_home(scv_home, descriptor)
    env = signin_environment(descriptor, environ, scv_home)
    return run_attached([executable, *table[name], *extra], env, home)


def run_status_command(descriptor: Descriptor, executable: str, scv_home: Path,
                       environ: dict[str, str]) -> Captured:
    home = prepare_private_home(scv_home, descriptor)
    env = signin_environment(descriptor, environ, scv_home)
    return run_captured([executable, *STATUS_ARGS[descriptor.name]], env, home)
