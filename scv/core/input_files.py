"""Reading a user-supplied input file (a model script, a batch) whole, with a size bound and
errors that say what was wrong."""

from pathlib import Path

from scv.core.errors import UsageError


def read_bounded(path: Path, limit: int, what: str, expect: str) -> bytes:
    """The file's bytes; a missing, unreadable or oversized file is a UsageError naming `what`."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as err:
        raise UsageError(f"{what} {path} cannot be read ({err.strerror}); pass {expect}") from None
    if len(data) > limit:
        raise UsageError(f"{what} {path} is over {limit >> 20} MiB; split it")
    return data
