"""What the sandbox would do here, for `scv sandbox check` and `scv tools --json`: the kernel's
support, the configuration, and what one call would get (or the sentence refusing it)."""

import tempfile
from pathlib import Path
from typing import Any

import msgspec

from scv.config.load import Config
from scv.core.errors import RefusedError
from scv.core.sandbox import rules
from scv.core.sandbox.fsview import REAL_FS
from scv.core.sandbox.policy import SandboxRequest, build_policy, network_label
from scv.sandbox import choose, kernel

FS_NAMES = {rules.EXECUTE: "execute", rules.WRITE_FILE: "write_file", rules.READ_FILE: "read_file",
            rules.READ_DIR: "read_dir", rules.REMOVE_DIR: "remove_dir", rules.REMOVE_FILE: "remove_file",
            rules.MAKE_CHAR: "make_char", rules.MAKE_DIR: "make_dir", rules.MAKE_REG: "make_reg",
            rules.MAKE_SOCK: "make_sock", rules.MAKE_FIFO: "make_fifo", rules.MAKE_BLOCK: "make_block",
            rules.MAKE_SYM: "make_sym", rules.REFER: "refer", rules.TRUNCATE: "truncate",
            rules.IOCTL_DEV: "ioctl_dev"}
NET_NAMES = {rules.NET_BIND_TCP: "bind_tcp", rules.NET_CONNECT_TCP: "connect_tcp"}
SCOPE_NAMES = {rules.SCOPE_ABSTRACT_UNIX_SOCKET: "abstract_unix_socket", rules.SCOPE_SIGNAL: "signal"}
TMPDIR_SHOWN = "<a private $TMPDIR per call>"


def _names(bits: int, names: dict[int, str]) -> list[str]:
    return [name for bit, name in names.items() if bits & bit]


def configured(config: Config) -> dict[str, Any]:
    agents = {name: {"mode": mode, "network": network}
              for name in config.agents
              for mode, network in [choose.setting(config, name)]
              if (mode, network) != (config.tools.sandbox, config.tools.sandbox_network)}
    return {"mode": config.tools.sandbox, "network": config.tools.sandbox_network,
            "fallback": config.tools.sandbox_fallback,
            "writable": list(config.tools.sandbox_writable), "agents": agents}


def _call(request: SandboxRequest, workspace: Path) -> dict[str, Any]:
    policy = build_policy(request, str(workspace), tempfile.gettempdir(), REAL_FS)
    # The worker adds one more rule, for the call's own temporary folder.
    planned = rules.landlock_rules(policy.writable, policy.devices, policy.hidden, request.landlock_abi,
                                   request.hide_with, REAL_FS)
    abi = request.landlock_abi
    return {
        "sandboxed": True, "mode": request.mode, "network": request.network,
        "network_label": network_label(request),
        "writable": [*policy.writable, *(f"{home} (made when the agent first runs)" for home in request.keep
                                         if home not in policy.writable), TMPDIR_SHOWN],
        "hidden": list(policy.hidden), "devices": list(policy.devices),
        "tier": request.tier, "sockets": request.sockets,
        "hide_with": request.hide_with, "network_with": request.network_with,
        "user_namespace": request.user_namespace,
        "landlock": {"abi": abi, "handled_fs": _names(rules.handled_fs(abi), FS_NAMES),
                     "handled_net": _names(rules.handled_net(abi, request.network), NET_NAMES),
                     "scoped": _names(rules.scoped(abi), SCOPE_NAMES), "rules": len(planned) + 1},
        "dropped": list(request.dropped),
    }


def call_report(config: Config, workspace: Path, agent: str | None = None) -> dict[str, Any]:
    """What one bash call (or one call of `agent`) would get. With the sandbox off, also what
    `workspace-write` without network would give, as a preview."""
    mode, network = choose.setting(config, agent)
    report: dict[str, Any] = {"tool": f"agent {agent}" if agent else "bash", "configured_mode": mode}
    if mode == "off":
        preview = msgspec.structs.replace(config.tools, sandbox="workspace-write", sandbox_network=False)
        config = msgspec.structs.replace(config, tools=preview, agents={})
        report["preview"] = True
    try:
        request = choose.request_for(config, workspace, agent)
    except RefusedError as err:
        report.update({"sandboxed": False, "tier": "refused", "refused": str(err)})
        return report
    report.update(_call(request, workspace))
    report["sandboxed"] = mode != "off"
    return report


def sandbox_section(config: Config) -> dict[str, Any]:
    """`scv tools --json`'s view: the configured mode and what this kernel supports."""
    return {**configured(config), "kernel": msgspec.to_builtins(kernel.support())}


def full_report(config: Config, workspace: Path, agent: str | None = None) -> dict[str, Any]:
    return {"kernel": msgspec.to_builtins(kernel.support()), "config": configured(config),
            "call": call_report(config, workspace, agent), "tiers": choose.NOT_COVERED}
