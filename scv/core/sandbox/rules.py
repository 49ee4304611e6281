"""Landlock rules for a policy: which access rights the ruleset handles at a given ABI, which
paths it grants them on, and what a lower ABI drops. Pure: the file system is seen through a
small `FsView`, so the planning is tested over generated trees.

Landlock grants by hierarchy: a right granted on a folder holds for everything beneath it, and
nothing can be taken back lower down. So reads are granted on every sibling along the path to
each location kept unreadable, with only the listing of the folders on that path. `/dev` is
always one of them (only the harmless devices are granted: a raw disk or /dev/mem would show
what the mounts hide); the secret locations are too when no mount namespace hides them
(`hide_with = "rules"`).
"""

import posixpath
from typing import Iterable, Protocol

import msgspec

# File-system access rights (uapi linux/landlock.h), by the ABI that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER = 1 << 13          # ABI 2
TRUNCATE = 1 << 14       # ABI 3
IOCTL_DEV = 1 << 15      # ABI 5
ABI1_FS = (1 << 13) - 1
# Network rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
DEVICE_FOLDER = "/dev"
# The only rights a rule on something that is not a folder may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
# No device nodes are made anywhere: a block device made in the workspace would read the raw disk.
WRITE_RIGHTS = (ABI1_FS & ~(READ | MAKE_CHAR | MAKE_BLOCK)) | REFER | TRUNCATE | IOCTL_DEV
DEVICE_RIGHTS = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV

# What each ABI step adds, and what a call loses on a kernel below it.
DEGRADATIONS = (
    (2, "refer", "moving or hard-linking a file into another folder is always refused (Landlock ABI 2 allows it "
                 "inside the writable folders)"),
    (3, "truncate", "truncate(2) of a file outside the writable folders is not prevented (Landlock ABI 3)"),
    (4, "network", "no Landlock TCP rules (ABI 4): only a network namespace can block the network"),
    (5, "ioctl_dev", "ioctl on device files is not filtered (Landlock ABI 5)"),
    (6, "scoping", "signals to processes outside the sandbox and their abstract UNIX sockets are not blocked "
                   "(Landlock ABI 6)"),
)


def handled_fs(abi: int) -> int:
    rights = ABI1_FS
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def handled_net(abi: int, network: bool) -> int:
    """TCP bind and connect are handled (so refused: no rule allows a port) whenever the network
    is off and the ABI has them, beside a network namespace or instead of one."""
    return NET_BIND_TCP | NET_CONNECT_TCP if not network and abi >= 4 else 0


def scoped(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


def dropped(abi: int) -> list[tuple[str, str]]:
    """(name, what the call loses) for each Landlock feature this ABI lacks."""
    return [(name, text) for needed, name, text in DEGRADATIONS if abi < needed]


class FsView(Protocol):
    def kind(self, path: str) -> str | None:
        """"dir", "file", "link" or "other" (lstat: a symlink is "link"); None if missing."""

    def children(self, path: str) -> list[str]:
        """The names in a folder."""

    def entries(self, path: str) -> list[tuple[str, str | None]]:
        """(name, kind) for each entry of a folder, as `kind` would say (the real one reads the
        kinds from the listing itself, without a stat each)."""


class Rule(msgspec.Struct, frozen=True):
    path: str
    rights: int


def _ancestors(path: str) -> Iterable[str]:
    while path != "/":
        path = posixpath.dirname(path)
        yield path


def _sibling_reads(hidden: Iterable[str], fs: FsView) -> list[Rule]:
    """Read rules covering everything but the hidden paths: the folders on the way to a hidden
    path may only be listed; each of their other entries is granted whole."""
    hidden = set(hidden)
    on_the_way = {a for h in hidden for a in _ancestors(h)}
    rules: list[Rule] = []

    def visit(folder: str) -> None:
        rules.append(Rule(folder, READ_DIR))
        for name, kind in sorted(fs.entries(folder)):
            entry = posixpath.join(folder, name)
            if entry in hidden:
                continue
            if entry in on_the_way:
                visit(entry)
                continue
            if kind == "dir":
                rules.append(Rule(entry, READ))
            elif kind in ("file", "other"):
                rules.append(Rule(entry, EXECUTE | READ_FILE))
            # A symlink needs no rule: access is checked on the path it leads to.

    visit("/")
    return rules


def folder_rights(abi: int) -> int:
    """What a writable folder grants (the call's temporary folder is one the worker adds)."""
    return (READ | WRITE_RIGHTS) & handled_fs(abi)


def landlock_rules(writable: Iterable[str], devices: Iterable[str], hidden: Iterable[str], abi: int,
                   hide_with: str, fs: FsView) -> list[Rule]:
    """Every rule of the call's ruleset but its temporary folder's; each rule's rights are within
    what the ABI handles and what its kind of file may carry."""
    handled = handled_fs(abi)
    unreadable = [*(hidden if hide_with == "rules" else []), DEVICE_FOLDER]
    rules = _sibling_reads(unreadable, fs)
    if fs.kind(DEVICE_FOLDER) == "dir":
        rules.append(Rule(DEVICE_FOLDER, READ_DIR))     # its names may be listed
    for root in writable:
        rules.append(Rule(root, folder_rights(abi) if fs.kind(root) == "dir" else FILE_RIGHTS & handled))
    for device in devices:
        rules.append(Rule(device, DEVICE_RIGHTS & handled))
    return [Rule(rule.path, rule.rights & handled) for rule in rules]

