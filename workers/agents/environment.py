"""The environment an agent process gets: the inherited one minus every credential, endpoint and
state variable of any vendor, then a private HOME, SCV_HOME and XDG folders under
`$SCV_HOME/agents/<name>`, the agent's own state variable, and the delegation tags."""

from pathlib import Path

from workers.agents.descriptors import COMMON_REMOVED, Descriptor, agent_home, state_dir

PARENT_VARIABLE = "SCV_PARENT"
DEPTH_VARIABLE = "SCV_DELEGATION_DEPTH"
CHAIN_SEPARATOR = ","


def is_removed(name: str, descriptor: Descriptor) -> bool:
    if name.endswith("_API_KEY"):
        return True
    for pattern in COMMON_REMOVED + descriptor.removed_env:
        if pattern.endswith("_") and name.startswith(pattern):
            return True
        if name == pattern:
            return True
    return False


def parent_chain(inherited: str | None, link: str) -> str:
    """`SCV_PARENT` for a delegated process: this run's link appended to an inherited chain."""
    return f"{inherited}{CHAIN_SEPARATOR}{link}" if inherited else link


def build_environment(descriptor: Descriptor, inherited: dict[str, str], scv_home: Path, *, parent: str,
                      depth: int, full_permissions: bool) -> dict[str, str]:
    """`parent` is `<instance>/<session>/<handle>`; `depth` is the caller's depth plus one."""
    env = {name: value for name, value in inherited.items() if not is_removed(name, descriptor)}
    home = agent_home(scv_home, descriptor.name)
    env["HOME"] = str(home)
    env["SCV_HOME"] = str(home / ".scv")
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    if descriptor.state_variable:
        env[descriptor.state_variable] = str(state_dir(scv_home, descriptor))
    env.update(descriptor.extra_env)
    if full_permissions:
        env.update(descriptor.full_permission_env)
    env[PARENT_VARIABLE] = parent_chain(inherited.get(PARENT_VARIABLE), parent)
    env[DEPTH_VARIABLE] = str(depth)
    return env


def prepare_home(scv_home: Path, descriptor: Descriptor) -> None:
    """Creates the private home and state folder (mode 0700) if they are missing."""
    for folder in (agent_home(scv_home, descriptor.name), state_dir(scv_home, descriptor)):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def inherited_depth(environ: dict[str, str]) -> int:
    """The delegation depth of an SCV process started by a delegated agent (0 otherwise); a value
    that is not a small non-negative number counts as the deepest, so the limit still holds."""
    value = environ.get(DEPTH_VARIABLE)
    if value is None or value == "":
        return 0
    return int(value) if value.isdigit() and len(value) <= 3 else 999
