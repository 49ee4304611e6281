"""The one seam between the stopping logic and the operating system.

Everything the kill policy does to processes goes through a `ProcessOps`, so tests can
replace it with a recording fake and check the escalation without real children, and
also run it for real. Shared by the supervisor and the workers: standard library only.
"""

import os
import time

from scv.core import lineage

TAG_VARIABLE = "SCV_CALL"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name, from the state on (None: gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the state follows the last ')'.
    return data[data.rindex(b")") + 2:].split()


def _stat_state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0].decode() if fields else None


def _boot_time() -> float:
    with open("/proc/stat", "rb") as fh:
        for line in fh:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise OSError("/proc/stat has no btime line")


def start_time(pid: int) -> float | None:
    """When the process started, in seconds since the epoch (the figure psutil's create_time
    gives, computed the same way), or None when there is no such process."""
    fields = _stat_fields(pid)
    if not fields or len(fields) < 20:
        return None
    try:
        return int(fields[19]) / _CLOCK_TICKS + _boot_time()
    except (OSError, ValueError):
        return None


def parent_of(pid: int) -> int | None:
    """The parent's PID, or None when there is no such process."""
    fields = _stat_fields(pid)
    return int(fields[1]) if fields and len(fields) > 1 else None


def session_of(pid: int) -> int | None:
    """The session id (the pid of the session's leader), or None when there is no such process."""
    fields = _stat_fields(pid)
    return int(fields[3]) if fields and len(fields) > 3 else None


def is_running(pid: int) -> bool:
    """True for a process that exists and is not a zombie."""
    state = _stat_state(pid)
    return state is not None and state not in ("Z", "X")


class ProcessOps:
    """Real process operations on Linux."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def fork(self) -> int:
        return os.fork()

    def signal_group(self, pgid: int, sig: int) -> bool:
        try:
            os.killpg(pgid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def signal(self, pid: int, sig: int) -> bool:
        try:
            os.kill(pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def children(self, pid: int) -> list[int]:
        out = []
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return out
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    out.extend(int(x) for x in fh.read().split())
            except OSError:
                continue
        return out

    def descendants(self, pid: int) -> list[int]:
        """Live (not zombie) descendants of `pid`, found through /proc's children lists."""
        found, queue = [], self.children(pid)
        while queue:
            child = queue.pop()
            state = _stat_state(child)
            if state is None:
                continue
            queue.extend(self.children(child))
            if state not in ("Z", "X"):
                found.append(child)
        return found

    def reap(self) -> dict[int, int]:
        """Collects every exited child of this process: {pid: wait status}."""
        statuses = {}
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            statuses[pid] = status
        return statuses

    def tagged(self, value: str) -> list[int]:
        """Processes whose environment carries TAG_VARIABLE=value (setsid escapees included)."""
        wanted = f"{TAG_VARIABLE}={value}".encode()
        return _matching(lambda pid, env: wanted in env.split(b"\0"))

    def in_chain(self, link: str) -> list[int]:
        """Live processes whose SCV_PARENT chain holds `link` (this process excluded)."""
        wanted = link.encode()
        return _matching(lambda pid, env: wanted in lineage.links_in_environ(env) and is_running(pid))


def _matching(test) -> list[int]:
    """Every other process whose raw environment passes `test(pid, environ)`."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if test(int(entry), env):
            found.append(int(entry))
    return found


REAL = ProcessOps()
