"""The sandbox of one call, decided on the supervisor side before approval: the mode and network
setting from the user's configuration (an agent's own table first), the secret locations, and
the mechanism this kernel allows. A call that cannot get the sandbox it asks for is refused with
a sentence naming the missing kernel feature; it never runs unsandboxed."""

import os
import pwd
import tempfile
from pathlib import Path

from scv import config as config_module
from scv.agents.descriptors import agent_home
from scv.config import Config
from scv.errors import RefusedError
from scv.sandbox import kernel, rules
from scv.sandbox.fsview import REAL_FS
from scv.sandbox.policy import KernelSupport, SandboxRequest, build_policy, hidden_inside_writable, secret_candidates


def setting(config: Config, agent: str | None = None) -> tuple[str, bool]:
    """(mode, network) for bash, or for the named agent."""
    mode, network = config.tools.sandbox, config.tools.sandbox_network
    own = config.agents.get(agent) if agent else None
    if own is not None:
        mode = own.sandbox if own.sandbox is not None else mode
        network = own.sandbox_network if own.sandbox_network is not None else network
    return mode, network


def homes() -> list[str]:
    """$HOME, and the account's home when HOME points elsewhere."""
    found = [os.path.expanduser("~")]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return list(dict.fromkeys(os.path.normpath(home) for home in found if home.startswith("/")))


def mechanism(mode: str, network: bool, support: KernelSupport) -> dict:
    """How this kernel enforces the request, with what it cannot enforce; raises RefusedError
    when a part of the request cannot be enforced at all."""
    where = f"tools.sandbox = \"{mode}\""
    if support.landlock_abi < 1:
        raise RefusedError(f"the sandbox ({where}) needs Landlock, and {support.landlock_error}; the call was not "
                           "run (set tools.sandbox = \"off\" to run without a sandbox)")
    abi = support.landlock_abi
    dropped = [text for name, text in rules.dropped(abi) if name != "network"]
    hide_with = "mount" if support.mount_namespace else "rules"
    if hide_with == "rules":
        dropped.append("secret locations are hidden by Landlock rules alone, as no mount namespace can be made "
                       f"({support.mount_namespace_error or support.user_namespace_error}): the folders on the way "
                       "to them can still be listed, entries created there during the call cannot be read, and "
                       "daemon sockets (D-Bus, Docker, ssh-agent) stay reachable")
    network_with = "none"
    if not network:
        if support.network_namespace:
            network_with = "namespace"
        elif abi >= 4:
            network_with = "landlock"
            dropped.append("UDP, and so DNS, is not blocked: Landlock filters TCP only, and no network namespace can "
                           f"be made ({support.network_namespace_error or support.user_namespace_error})")
        else:
            raise RefusedError(f"the sandbox's network block (tools.sandbox_network = false) needs a network namespace "
                               f"or Landlock ABI 4, and this kernel has neither ("
                               f"{support.network_namespace_error or support.user_namespace_error}; Landlock ABI "
                               f"{abi}); the call was not run (set tools.sandbox_network = true to allow the network)")
    user_namespace = not support.cap_sys_admin and (hide_with == "mount" or network_with == "namespace")
    return {"hide_with": hide_with, "network_with": network_with, "user_namespace": user_namespace,
            "landlock_abi": abi, "dropped": dropped}


def request_for(config: Config, workspace: Path, agent: str | None = None) -> SandboxRequest | None:
    """The call's sandbox, or None when it runs without one."""
    mode, network = setting(config, agent)
    if mode == "off":
        return None
    scv_home = str(config_module.scv_home())
    keep = [str(agent_home(Path(scv_home), agent))] if agent else []
    request = SandboxRequest(mode=mode, network=network, writable=list(config.tools.sandbox_writable),
                             hidden=secret_candidates(homes(), scv_home, os.getuid(), dict(os.environ)), keep=keep,
                             **mechanism(mode, network, kernel.support()))
    if request.hide_with == "rules":
        # The call's own temporary folder does not exist yet; it is never a parent of a secret.
        placeholder = os.path.join(tempfile.gettempdir(), "scv-sandbox-not-made-yet")
        policy = build_policy(request, str(workspace), placeholder, REAL_FS)
        clash = hidden_inside_writable(policy)
        if clash:
            root, path = clash[0]
            raise RefusedError(f"the sandbox cannot keep {path} unreadable inside the writable folder {root} without a "
                               "mount namespace; the call was not run (use a workspace that does not hold it)")
    return request
