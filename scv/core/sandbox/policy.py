"""What a sandboxed call may touch: write only the workspace (in `workspace-write`), the extra
writable folders, its private temporary folder, an agent's own home and a few harmless devices;
read everything except the secret locations; and, unless allowed, no network.

The supervisor decides the request from the configuration (never from the model's arguments),
builds the `Policy` and its Landlock rules right before the call runs, and sends the resulting
`SandboxPlan` with it; the worker only adds the call's private temporary folder (and, with a
mount namespace, its own ancestors' /proc entries) and applies it. The file system is seen
through a small view, so everything here is testable over generated trees.
"""

import posixpath
from typing import Protocol

import msgspec

MODES = ("off", "workspace-write", "read-only")
# The order in which a project may only tighten `tools.sandbox`.
STRICTNESS = {mode: rank for rank, mode in enumerate(MODES)}

# Credential and key locations under the user's home (the spec's list for chat_attach, plus the
# homes of the other agents SCV knows).
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials", ".npmrc",
    ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".config/gh", ".config/gcloud",
    ".config/hub", ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ".config/microsoft-edge", ".password-store", ".local/share/keyrings", ".codex", ".claude",
    ".claude.json", ".grok", ".dsh", ".pi", ".scv",
)
HOST_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers", "/etc/sudoers.d")
# Daemons that would run a command outside the sandbox for whoever connects (D-Bus and systemd,
# container engines). The seccomp filter refuses every UNIX socket already; hiding these too
# keeps them unreachable should a later filter allow some.
LOCAL_DOORS = ("/run/dbus", "/run/systemd/private", "/run/docker.sock", "/run/containerd",
               "/run/podman", "/run/snapd.socket", "/run/snapd-snap.socket")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class SandboxRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """The sandbox a call runs in, as the supervisor decided it from the configuration and the
    kernel's support."""

    mode: str                          # "workspace-write" or "read-only"
    network: bool                      # True: the network stays open
    writable: list[str] = []           # extra folders a workspace-write call may write (checked by the config)
    hidden: list[str] = []             # secret locations kept unreadable (some may not exist)
    keep: list[str] = []               # folders that stay writable even inside a hidden one (an agent's home)
    hide_with: str = "mount"           # "mount": empty mounts in a private mount namespace; "rules": Landlock only
    network_with: str = "none"         # "namespace", "landlock" (TCP only), or "none" (network allowed)
    user_namespace: bool = False       # the worker first enters its own user namespace (no CAP_SYS_ADMIN)
    landlock_abi: int = 1
    tier: str = "namespaces"           # "namespaces", or "landlock-only" (the user's tools.sandbox_fallback)
    sockets: str = "no-unix"           # the seccomp filter (workers/seccomp.py): "no-unix" or "tcp-only"
    dropped: list[str] = []            # what this kernel cannot enforce, one sentence each


class SandboxPlan(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """What the worker applies (sent in the call's options): the request's mechanism, the
    locations to hide behind mounts, and the Landlock rules, all but the temporary folder's."""

    mode: str
    network: bool
    hide_with: str
    network_with: str
    user_namespace: bool
    landlock_abi: int
    sockets: str                       # the seccomp filter: "no-unix" or "tcp-only"
    writable: list[str]                # the writable roots, left writable when the mounts go read-only
    hidden: list[str]                  # resolved and existing when the plan was made
    rules: list[tuple[str, int]]       # (path, Landlock access rights)


def preparation(plan: dict | None) -> str:
    """What a spare worker can make ready for a call with this plan (its `sandbox` option) before
    the call arrives: "userns", "mount", "network", comma-separated; "" for nothing."""
    if not plan:
        return ""
    parts = [name for name, wanted in (("userns", plan.get("user_namespace")), ("mount", plan.get("hide_with") == "mount"),
                                       ("network", plan.get("network_with") == "namespace")) if wanted]
    return ",".join(parts) if "mount" in parts or "network" in parts else ""


class KernelSupport(msgspec.Struct, kw_only=True, frozen=True):
    """What the mechanism found this kernel allows (see workers/sandbox_linux.py)."""

    landlock_abi: int = 0
    landlock_error: str | None = None
    cap_sys_admin: bool = False
    user_namespace: bool = False
    user_namespace_error: str | None = None
    mount_namespace: bool = False
    mount_namespace_error: str | None = None
    network_namespace: bool = False
    network_namespace_error: str | None = None


class PathView(Protocol):
    def kind(self, path: str) -> str | None: ...
    def children(self, path: str) -> list[str]: ...
    def resolve(self, path: str) -> str: ...


def secret_candidates(homes: list[str], scv_home: str, uid: int, environ: dict[str, str]) -> list[str]:
    """Every location a sandboxed call must not read, whether it exists or not."""
    found = [posixpath.join(home, name) for home in homes for name in HOME_SECRETS]
    found += [scv_home, *HOST_SECRETS, *LOCAL_DOORS, f"/run/user/{uid}"]
    if "/root" not in homes:
        found.append("/root")
    for variable in ("XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "GPG_AGENT_INFO"):
        value = environ.get(variable, "").split(":")[0]
        if value.startswith("/"):
            found.append(value)
    return list(dict.fromkeys(posixpath.normpath(path) for path in found))


class Policy(msgspec.Struct, frozen=True):
    mode: str
    network: bool
    workspace: str
    writable: tuple[str, ...]      # resolved roots the call may write beneath (its TMPDIR comes on top)
    hidden: tuple[str, ...]        # resolved, existing locations it may not read (none contains a writable root)
    devices: tuple[str, ...]


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root + "/")


def _hide_around(hidden: list[str], visible: list[str], fs: PathView) -> list[str]:
    """A hidden folder holding something that must stay visible is replaced by its other
    entries, step by step down the path to what stays visible."""
    out, work = [], list(hidden)
    while work:
        path = work.pop()
        inner = [v for v in visible if _within(v, path)]
        if not inner:
            out.append(path)
        elif path not in inner and fs.kind(path) == "dir":
            work.extend(posixpath.join(path, name) for name in fs.children(path)
                        if fs.kind(posixpath.join(path, name)) != "link")
    # Drop what an outer hidden folder covers already.
    out.sort()
    kept: list[str] = []
    for path in out:
        if not any(_within(path, outer) for outer in kept):
            kept.append(path)
    return kept


def build_policy(request: SandboxRequest, workspace: str, tmp_root: str, fs: PathView) -> Policy:
    """The call's policy. Paths are resolved, so a symlink cannot point a rule somewhere else.
    `tmp_root` (where the worker makes the call's own temporary folder) stays visible."""
    writable = list(request.keep)
    if request.mode == "workspace-write":
        writable += [workspace, *request.writable]
    writable = list(dict.fromkeys(fs.resolve(path) for path in writable if fs.kind(path) is not None))
    devices = tuple(d for d in DEVICES if fs.kind(d) == "other")
    visible = [*writable, *devices, fs.resolve(workspace), tmp_root]
    hidden = []
    for candidate in request.hidden:
        if fs.kind(candidate) is None:
            continue
        hidden.append(fs.resolve(candidate))
    hidden = _hide_around(list(dict.fromkeys(hidden)), visible, fs)
    return Policy(mode=request.mode, network=request.network, workspace=fs.resolve(workspace),
                  writable=tuple(writable), hidden=tuple(hidden), devices=devices)


def hidden_inside_writable(policy: Policy) -> list[tuple[str, str]]:
    """(writable root, hidden path) pairs: Landlock alone cannot keep such a path unreadable."""
    return [(root, path) for root in policy.writable for path in policy.hidden if _within(path, root)]


def network_label(request: SandboxRequest | SandboxPlan) -> str:
    if request.network:
        return "network allowed"
    if request.network_with == "landlock":
        return "no network (Landlock and seccomp: no network namespace)"
    return "no network"


def label(request: SandboxRequest | SandboxPlan) -> str:
    """The approval summary's suffix, such as `sandbox: workspace-write, no network`."""
    return f"sandbox: {request.mode}, {network_label(request)}"


# What a command prints when the sandbox stopped it (EACCES, EPERM, EROFS; an unreachable network).
DENIAL_MARKERS = ("Permission denied", "Operation not permitted", "Read-only file system")
NETWORK_MARKERS = ("Network is unreachable", "Temporary failure in name resolution", "Could not resolve host",
                   "Name or service not known", "Cannot assign requested address")


def looks_denied(text: str, network: bool) -> bool:
    """A hint, not a guarantee: the output carries the error a sandbox denial gives."""
    markers = DENIAL_MARKERS if network else DENIAL_MARKERS + NETWORK_MARKERS
    return any(marker in text for marker in markers)
