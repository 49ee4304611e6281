"""What every Ray process SCV starts and every Ray client SCV runs share: the token file, the
environment, addresses, and where this machine's node is recorded. Standard library only: the
cluster commands import this before they know whether Ray is installed.

The token is the cluster's only guard (Ray listens on every interface whatever address it is
given): SCV generates it itself, 0600 in a 0700 folder, and never prints it. Every process gets
`RAY_AUTH_MODE=token` and `RAY_AUTH_TOKEN_PATH`, and `RAY_USAGE_STATS_ENABLED=0`; nothing reads
or writes `~/.ray` (Ray's own `ray get-auth-token --generate` writes a 0644 token there, which a
later plain `ray start` would silently pick up)."""

import hashlib
import os
import re
import secrets
import socket
import stat
from pathlib import Path

from scv.core.errors import ScvError, UsageError
from scv.core.files import ensure_folder, write_atomic

TOKEN_NAME = "token"
DEFAULT_PORT = 6379
AGENT_RESOURCE = "scv_agent_"
HEAD_RESOURCE = "scv_head"
NAMESPACE = "scv"
MAX_TOKEN_BYTES = 4096
_LABEL_BAD = re.compile(r"[^A-Za-z0-9_.-]")
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\d{1,3}(\.\d{1,3}){3})$")


class ClusterError(ScvError):
    """The cluster cannot be reached or refused something; nothing was left half-done."""

    exit_code = 1


def folder(home: Path) -> Path:
    return home / "cluster"


def default_token(home: Path) -> Path:
    return folder(home) / TOKEN_NAME


def ensure_token(path: Path) -> bool:
    """Creates the token file (64 hex digits, 0600) unless one is there; True when it was created."""
    if path.exists() or path.is_symlink():
        read_token(path)        # refuses one that is not ours to trust
        return False
    ensure_folder(path.parent)
    write_atomic(path, secrets.token_hex(32).encode())
    return True


def read_token(path: Path) -> str:
    """The token, after checking the file: present, a regular file, 0600-like, not empty."""
    shown = str(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ClusterError(f"the token file {shown} does not exist; copy the head's token there (from "
                           "$SCV_HOME/cluster/token on the head) or pass --token-file") from None
    except OSError as err:
        raise ClusterError(f"the token file {shown} cannot be read ({err.strerror}); pass --token-file") from None
    if not stat.S_ISREG(info.st_mode):
        raise ClusterError(f"the token file {shown} is not a regular file; pass the copied token file with "
                           "--token-file")
    if info.st_mode & 0o077:
        raise ClusterError(f"the token file {shown} can be read by others (mode {stat.S_IMODE(info.st_mode):04o}); "
                           f"run chmod 600 {shown}")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TOKEN_BYTES + 1)
    except OSError as err:
        raise ClusterError(f"the token file {shown} cannot be read ({err.strerror}); pass --token-file") from None
    token = data.strip()
    if not token or len(data) > MAX_TOKEN_BYTES or not token.isascii() or any(c in token for c in b" \t\r\n"):
        raise ClusterError(f"the token file {shown} does not hold a token; copy the head's token file again")
    return token.decode()


def fingerprint(token: str) -> str:
    """A short digest to compare copies of the token by eye, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def ray_environment(base: dict[str, str], token_path: Path) -> dict[str, str]:
    """The environment of a Ray process or client SCV starts: token auth on, usage stats off, and
    no inherited address or token that would point it at another cluster."""
    env = {name: value for name, value in base.items()
           if name not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE")}
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = str(token_path.absolute())
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["RAY_USAGE_STATS_PROMPT_ENABLED"] = "0"
    return env


def parse_address(text: str, what: str = "the head's address") -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not _HOST.match(host) or not 0 < int(port) < 65536:
        raise UsageError(f"{what} {text!r} is not HOST:PORT (such as 10.0.0.5:{DEFAULT_PORT})")
    return host.strip("[]"), int(port)


def label(text: str) -> str:
    """A Ray node label value: letters, digits, '_', '.', '-', at most 63, alphanumeric at both ends."""
    cleaned = _LABEL_BAD.sub("-", text)[:63].strip("-_.")
    return cleaned or "unknown"


def host_name() -> str:
    return socket.gethostname() or "unknown"


def slots_resource(agent: str) -> str:
    return f"{AGENT_RESOURCE}{agent}"
