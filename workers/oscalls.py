"""The one seam between the stopping logic and the operating system.

Everything the kill policy does to processes goes through a `ProcessOps`, so tests can
replace it with a recording fake and check the escalation without real children, and
also run it for real.
"""

import os
import time

TAG_VARIABLE = "SCV_CALL"


def _stat_state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the state follows the last ')'.
    return chr(data[data.rindex(b")") + 2])


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
        me = os.getpid()
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    env = fh.read()
            except OSError:
                continue
            if wanted in env.split(b"\0"):
                out.append(int(entry))
        return out

    def create_time(self, pid: int) -> float | None:
        import psutil    # imported late: only record keeping needs it, not the call path
        try:
            return psutil.Process(pid).create_time()
        except psutil.Error:
            return None


REAL = ProcessOps()
