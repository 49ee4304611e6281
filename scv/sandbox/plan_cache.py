"""A call's sandbox plan reused while what it was read from is unchanged.

Planning reads the file system: `lstat` of every secret candidate, the listing of each folder on
the way to a hidden one, the resolved workspace and writable roots (about 0.6 ms a call here,
most of a sandboxed `bash true`'s extra cost). Each answer depends on one of two things:
- a path's kind, or a folder's listing, on that folder's entries. Its stamp is the folder's
  inode and change times (`stat`, following links: a folder reached another way is another
  inode); they move whenever an entry is added, removed, renamed, replaced or re-permitted.
- a resolved path on what each step along it is. Its stamp is each step's inode and type
  (`lstat`), with a link's target; no times, so a busy folder such as /tmp above the workspace
  does not void the plan.
The plan is kept with its stamps and reused only while every stamp reads the same.

Timestamps come from a coarse clock: a change made within the same tick as the stamp can leave a
folder's times as they were. As git does with a racily clean index, a plan is not kept when a
folder it listed changed within `RACY_SECONDS` of planning, so such a change is always seen.
"""

import os
import posixpath
import stat
import threading
import time
from typing import Callable

from scv.core.sandbox.fsview import REAL_FS, RealFs

RACY_SECONDS = 1.0
KEPT = 16           # answers by (request, workspace, temporary root); a session has a few

Stamp = tuple | None


def _steps(path: str) -> list[str]:
    """`/a/b/c` -> `/a`, `/a/b`, `/a/b/c`: each name the kernel looks up on the way."""
    parts = [part for part in posixpath.normpath(path).split("/") if part]
    return ["/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _listing(folder: str) -> Stamp:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return "listing", st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def _identity(path: str) -> Stamp:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            return "link", st.st_dev, st.st_ino, os.readlink(path)
        except OSError:
            return None
    return "step", st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)


class StampingFs:
    """The real file system, remembering what each answer depended on."""

    def __init__(self, fs: RealFs = REAL_FS):
        self._fs = fs
        self.listed: set[str] = set()        # folders whose entries an answer read
        self.stepped: set[str] = set()       # paths whose identity an answer read
        self._resolved: dict[str, str] = {}

    def kind(self, path: str) -> str | None:
        self.listed.add(posixpath.dirname(posixpath.normpath(path)))
        return self._fs.kind(path)

    def children(self, path: str) -> list[str]:
        self.listed.add(path)
        return self._fs.children(path)

    def entries(self, path: str) -> list[tuple[str, str | None]]:
        self.listed.add(path)
        return self._fs.entries(path)

    def resolve(self, path: str) -> str:
        resolved = self._fs.resolve(path)
        self.stepped.update(_steps(path), _steps(resolved))
        self._resolved[path] = resolved
        return resolved

    def still_resolved(self) -> bool:
        """Every path resolves as it did: a step changed between the answer and its stamp
        would otherwise be stamped in its new state beside the old answer."""
        return all(self._fs.resolve(path) == resolved for path, resolved in self._resolved.items())

    def stamps(self) -> dict[tuple[str, str], Stamp]:
        found = {("listing", folder): _listing(folder) for folder in self.listed}
        found.update({("step", path): _identity(path) for path in self.stepped})
        return found


def _read(what: tuple[str, str]) -> Stamp:
    kind, path = what
    return _listing(path) if kind == "listing" else _identity(path)


class PlanCache:
    """Plans by key, each with the stamps of the folders it was made from."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._lock = threading.Lock()      # calls are planned from several threads (jobs, agents)
        self._kept: dict[object, tuple[object, dict[tuple[str, str], Stamp]]] = {}

    def get(self, key: object, make: Callable[[StampingFs], object]) -> object:
        """The kept plan for `key` if no folder it read has changed since, else `make`'s new one."""
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and all(_read(what) == stamp for what, stamp in kept[1].items()):
            return kept[0]
        started = self._clock()
        fs = StampingFs()
        plan = make(fs)
        stamps = fs.stamps()
        with self._lock:
            self._kept.pop(key, None)
            if self._settled(stamps, started) and fs.still_resolved():
                if len(self._kept) >= KEPT:
                    self._kept.pop(next(iter(self._kept)))
                self._kept[key] = (plan, stamps)
        return plan

    def _settled(self, stamps: dict[tuple[str, str], Stamp], started: float) -> bool:
        """No listed folder changed so recently that a further change could leave its times the same."""
        racy = int((started - RACY_SECONDS) * 1e9)
        return all(stamp is None or stamp[0] != "listing" or max(stamp[3], stamp[4]) < racy
                   for stamp in stamps.values())
