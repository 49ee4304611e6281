"""Who started a delegated process: the `SCV_PARENT` chain and `SCV_DELEGATION_DEPTH`.

Every delegated process carries `SCV_PARENT`, a chain of links separated by commas, one link per
SCV that delegated on the way down; each link is `<instance>/<session>/<handle>`. Its
descendants inherit the chain, so a run's processes are found by their link even after they
left the process group. This module is the one place that writes or reads that format; it is
shared by the supervisor and the workers and imports nothing but the standard library.
"""

PARENT_VARIABLE = "SCV_PARENT"
DEPTH_VARIABLE = "SCV_DELEGATION_DEPTH"
SEPARATOR = ","
_PARENT_PREFIX = (PARENT_VARIABLE + "=").encode()


def link(instance: str, session: str, handle: str) -> str:
    """This run's link: `<instance>/<session>/<handle>`."""
    return f"{instance}/{session}/{handle}"


def extend(inherited: str | None, own: str) -> str:
    """The chain a delegated process gets: its run's link appended to an inherited chain."""
    return f"{inherited}{SEPARATOR}{own}" if inherited else own


def last_link(chain: str) -> str:
    """The link of the run that started the process carrying `chain`."""
    return chain.rsplit(SEPARATOR, 1)[-1]


def session_of(own: str) -> str:
    """The parent session named in a link ("" when the link has no session part)."""
    parts = own.split("/")
    return parts[1] if len(parts) >= 3 else ""


def links_in_environ(environ: bytes) -> list[bytes]:
    """The chain's links in a raw `/proc/<pid>/environ` (NUL-separated), or [] without one."""
    for item in environ.split(b"\0"):
        if item.startswith(_PARENT_PREFIX):
            return item[len(_PARENT_PREFIX):].split(SEPARATOR.encode())
    return []


def inherited_depth(environ: dict[str, str]) -> int:
    """The delegation depth of an SCV process started by a delegated agent (0 otherwise); a value
    that is not a small non-negative number counts as the deepest, so the limit still holds."""
    value = environ.get(DEPTH_VARIABLE)
    if value is None or value == "":
        return 0
    return int(value) if value.isdigit() and len(value) <= 3 else 999
