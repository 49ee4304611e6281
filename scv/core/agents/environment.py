"""The environment an agent process gets: the inherited one minus every credential, endpoint and
state variable of any vendor, then a private HOME, SCV_HOME and XDG folders under
`$SCV_HOME/agents/<name>`, the agent's own state variable, and the delegation tags."""

from pathlib import Path

from scv.core import lineage
from scv.core.agents.descriptors import COMMON_REMOVED, Descriptor, agent_home, state_dir

FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def is_removed(name: str, descriptor: Descriptor) -> bool:
    if name.endswith("_API_KEY"):
        return True
    for pattern in COMMON_REMOVED + descriptor.removed_env:
        if pattern.endswith("_") and name.startswith(pattern):
            return True
        if name == pattern:
            return True
    return False


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
    env[lineage.PARENT_VARIABLE] = lineage.extend(inherited.get(lineage.PARENT_VARIABLE), parent)
    env[lineage.DEPTH_VARIABLE] = str(depth)
    for name in descriptor.flags_read_as_one:
        if name in env:
            if env[name].strip().lower() in FALSE_WORDS:
                del env[name]
            else:
                env[name] = "1"
    return env


def prepare_home(scv_home: Path, descriptor: Descriptor) -> None:
    """Creates the private home and state folder (mode 0700) if they are missing."""
    for folder in (agent_home(scv_home, descriptor.name), state_dir(scv_home, descriptor)):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)

