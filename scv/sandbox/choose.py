"""The sandbox of one call, decided on the supervisor side before approval: the mode and network
setting from the user's configuration (an agent's own table first), the secret locations, and
the mechanism this kernel allows. A call that cannot get the sandbox it asks for is refused with
a sentence naming the missing kernel feature; it never runs unsandboxed."""

import functools
import os
import pwd
from pathlib import Path

import msgspec

from scv.config import load as config_module
from scv.config.load import Config
from scv.core.agents.descriptors import DESCRIPTORS, agent_home
from scv.core.agents.environment import prepare_home
from scv.core.errors import RefusedError
from scv.core.sandbox import rules
from scv.core.sandbox.policy import (KernelSupport, SandboxPlan, SandboxRequest, build_policy, hidden_inside_writable,
                                     secret_candidates)
from scv.sandbox import kernel
from scv.sandbox.plan_cache import PlanCache, StampingFs


def setting(config: Config, agent: str | None = None) -> tuple[str, bool]:
    """(mode, network) for bash, or for the named agent."""
    mode, network = config.tools.sandbox, config.tools.sandbox_network
    own = config.agents.get(agent) if agent else None
    if own is not None:
        mode = own.sandbox if own.sandbox is not None else mode
        network = own.sandbox_network if own.sandbox_network is not None else network
    return mode, network


@functools.lru_cache(maxsize=4)
def _account_home(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return None


def homes() -> list[str]:
    """$HOME, and the account's home when HOME points elsewhere."""
    found = [os.path.expanduser("~"), _account_home(os.getuid()) or ""]
    return list(dict.fromkeys(os.path.normpath(home) for home in found if home.startswith("/")))


# What each tier leaves open, for `scv sandbox check` and the refusals.
NOT_COVERED = {
    "namespaces": ["files reached through a hard link that already existed inside a writable folder stay "
                   "writable (the same inode)",
                   "other processes of the same user keep their /proc entries readable"],
    "landlock-only": ["the mode, times, owner and extended attributes of files outside the writable folders can "
                      "be changed (chmod, touch -d, chown, setxattr): no mount namespace makes them read-only",
                      "the folders on the way to a secret folder can be listed, and entries created there during "
                      "the call cannot be read",
                      "the /proc entries of SCV and its ancestors stay readable",
                      "files reached through a hard link that already existed inside a writable folder stay "
                      "writable (the same inode)"],
    "refused": ["the call does not run"],
}
FALLBACK_HINT = ("set tools.sandbox_fallback = \"landlock-only\" in your own config.toml to run such calls with "
                 "Landlock and seccomp alone, or tools.sandbox = \"off\" to run without a sandbox")


def mechanism(mode: str, network: bool, support: KernelSupport, fallback: str = "refuse") -> dict:
    """How this kernel enforces the request, with what it cannot enforce; raises RefusedError
    when a part of the request cannot be enforced, or only by a tier the user did not allow."""
    where = f"tools.sandbox = \"{mode}\""
    if support.landlock_abi < 1:
        raise RefusedError(f"the sandbox ({where}) needs Landlock, and {support.landlock_error}; the call was not "
                           "run (set tools.sandbox = \"off\" to run without a sandbox)")
    abi = support.landlock_abi
    dropped = [text for name, text in rules.dropped(abi) if name != "network"]
    missing = []
    if not support.mount_namespace:
        missing.append(("a private mount namespace (to hide the secret folders and keep files outside the writable "
                        "folders read-only)", support.mount_namespace_error or support.user_namespace_error))
    if not network and not support.network_namespace:
        missing.append(("a network namespace (tools.sandbox_network = false)",
                        support.network_namespace_error or support.user_namespace_error))
    tier = "landlock-only" if missing else "namespaces"
    if missing and fallback != "landlock-only":
        needs = " and ".join(f"{what}, and {why or 'it cannot be made here'}" for what, why in missing)
        raise RefusedError(f"the sandbox ({where}) needs {needs}; the call was not run ({FALLBACK_HINT})")
    hide_with = "mount" if support.mount_namespace else "rules"
    network_with, sockets = "none", "no-unix"
    if not network:
        if support.network_namespace:
            network_with = "namespace"
        elif abi >= 4:
            network_with, sockets = "landlock", "tcp-only"
        else:
            raise RefusedError(f"the sandbox's network block (tools.sandbox_network = false) needs a network namespace "
                               f"or Landlock ABI 4, and this kernel has neither ("
                               f"{support.network_namespace_error or support.user_namespace_error}; Landlock ABI "
                               f"{abi}); the call was not run (set tools.sandbox_network = true to allow the network)")
    if tier == "landlock-only":
        if hide_with == "rules":
            dropped += NOT_COVERED["landlock-only"][:3]
    user_namespace = not support.cap_sys_admin and (hide_with == "mount" or network_with == "namespace")
    return {"hide_with": hide_with, "network_with": network_with, "user_namespace": user_namespace,
            "landlock_abi": abi, "tier": tier, "sockets": sockets, "dropped": dropped}


@functools.lru_cache(maxsize=16)
def _candidates(home_dirs: tuple[str, ...], scv_home: str, uid: int, doors: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    return tuple(secret_candidates(list(home_dirs), scv_home, uid, dict(doors)))


def request_for(config: Config, workspace: Path, agent: str | None = None) -> SandboxRequest | None:
    """The call's sandbox, or None when it runs without one; raises RefusedError when this
    kernel (or, without a mount namespace, the workspace's layout) cannot give it."""
    mode, network = setting(config, agent)
    if mode == "off":
        return None
    scv_home = str(config_module.scv_home())
    keep = [str(agent_home(Path(scv_home), agent))] if agent else []
    doors = tuple((name, os.environ.get(name, "")) for name in ("XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "GPG_AGENT_INFO"))
    request = SandboxRequest(mode=mode, network=network, writable=list(config.tools.sandbox_writable),
                             hidden=list(_candidates(tuple(homes()), scv_home, os.getuid(), doors)), keep=keep,
                             **mechanism(mode, network, kernel.support(), config.tools.sandbox_fallback))
    if request.hide_with == "rules":
        tmp_root = _temp_root()
        clash = _PLANS.get((b"clash", msgspec.json.encode(request), str(workspace), tmp_root),
                           lambda fs: hidden_inside_writable(build_policy(request, str(workspace), tmp_root, fs)))
        if clash:
            root, path = clash[0]
            raise RefusedError(f"the sandbox cannot keep {path} unreadable inside the writable folder {root} without a "
                               "mount namespace; the call was not run (use a workspace that does not hold it)")
    return request


def plan_for(config: Config, workspace: Path, agent: str | None = None) -> SandboxPlan | None:
    """What the worker applies, made right before the call runs (after any approval), so the
    secret locations and rules are those of the moment it starts (a plan is reused only while
    every folder it was read from is unchanged: plan_cache)."""
    request = request_for(config, workspace, agent)
    if request is None:
        return None
    if agent:
        prepare_home(config_module.scv_home(), DESCRIPTORS[agent])     # so its rule can name it
    tmp_root = _temp_root()
    key = (msgspec.json.encode(request), str(workspace), tmp_root)
    return _PLANS.get(key, lambda fs: _plan(request, str(workspace), tmp_root, fs))


def _plan(request: SandboxRequest, workspace: str, tmp_root: str, fs: StampingFs) -> SandboxPlan:
    policy = build_policy(request, workspace, tmp_root, fs)
    planned = rules.landlock_rules(policy.writable, policy.devices, policy.hidden, request.landlock_abi,
                                   request.hide_with, fs)
    return SandboxPlan(mode=request.mode, network=request.network, hide_with=request.hide_with,
                       network_with=request.network_with, user_namespace=request.user_namespace,
                       landlock_abi=request.landlock_abi, sockets=request.sockets,
                       writable=list(policy.writable),
                       hidden=list(policy.hidden) if request.hide_with == "mount" else [],
                       rules=[(rule.path, rule.rights) for rule in planned])


# Planned calls' plans, reused while the folders they were read from are unchanged.
_PLANS = PlanCache()


def _temp_root() -> str:
    import tempfile     # late: only a call with a sandbox needs it
    return tempfile.gettempdir()
