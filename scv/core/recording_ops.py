"""The fake of the OS seam (scv/core/oscalls.py) for tests of who stops what: the real operations,
with every signal recorded as it is sent, so a test through real processes can check the stopping
path a supervisor or a worker took (the pure kill policy has its own fully fake clock and processes
in tests/test_stopping.py)."""

from scv.core.oscalls import ProcessOps


class RecordingOps(ProcessOps):
    def __init__(self) -> None:
        self.sent: list[tuple[str, int, int]] = []     # ("group" | "pid", target, signal), in order

    def signal_group(self, pgid: int, sig: int) -> bool:
        self.sent.append(("group", pgid, sig))
        return super().signal_group(pgid, sig)

    def signal(self, pid: int, sig: int) -> bool:
        self.sent.append(("pid", pid, sig))
        return super().signal(pid, sig)
