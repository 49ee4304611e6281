"""The kill policy against a recording fake of the OS seam (and a fake clock)."""

import signal

from scv.core import stopping


class FakeOps:
    """Processes that die on the signals they do not ignore; time advances only by sleep()."""

    def __init__(self, procs: dict[int, set[int]], spawn_during_grace: dict[float, int] | None = None):
        self.procs = procs                   # pid -> signals it ignores
        self.now = 0.0
        self.calls: list[tuple] = []
        self.spawn = dict(spawn_during_grace or {})

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        for at, pid in list(self.spawn.items()):
            if self.now >= at:
                self.procs[pid] = {signal.SIGTERM}
                del self.spawn[at]

    def _hit(self, pid, sig):
        if pid in self.procs and sig not in self.procs[pid]:
            del self.procs[pid]

    def signal_group(self, pgid, sig):
        self.calls.append(("group", pgid, sig, self.now))
        for pid in list(self.procs):
            self._hit(pid, sig)
        return True

    def signal(self, pid, sig):
        self.calls.append(("pid", pid, sig, self.now))
        self._hit(pid, sig)
        return True

    def find(self):
        return sorted(self.procs)


def test_immediate_sends_kill_and_never_waits():
    ops = FakeOps({10: {signal.SIGTERM}, 11: set()})
    stopping.stop(ops, group=10, find=ops.find, immediate=True)
    assert ops.calls[0] == ("group", 10, signal.SIGKILL, 0.0)
    assert all(call[2] == signal.SIGKILL for call in ops.calls)
    assert ops.now == 0.0 and ops.procs == {}


def test_term_then_nothing_more_when_everything_exits():
    ops = FakeOps({10: set(), 11: set()})
    killed = stopping.stop(ops, group=10, find=ops.find, immediate=False)
    assert killed == []
    assert [c[2] for c in ops.calls] == [signal.SIGTERM]
    assert ops.now == 0.0


def test_kill_after_the_grace_for_what_ignores_term():
    ops = FakeOps({10: set(), 12: {signal.SIGTERM}})
    killed = stopping.stop(ops, group=10, find=ops.find, immediate=False)
    assert killed == [12]
    kill_calls = [c for c in ops.calls if c[2] == signal.SIGKILL]
    assert kill_calls and all(c[3] >= stopping.GRACE_SECONDS for c in kill_calls)
    assert ops.procs == {}


def test_escapees_outside_the_group_are_signalled_by_pid():
    ops = FakeOps({10: set()})
    escapee = {20: set()}
    def find():
        return sorted(set(ops.procs) | set(escapee))
    def signal_pid(pid, sig):
        ops.calls.append(("pid", pid, sig, ops.now))
        escapee.pop(pid, None)
        ops._hit(pid, sig)
        return True
    ops.signal = signal_pid
    ops.signal_group = lambda pgid, sig: ops.calls.append(("group", pgid, sig, ops.now)) or ops._hit(10, sig)
    stopping.stop(ops, group=10, find=find, immediate=False)
    assert ("pid", 20, signal.SIGTERM, 0.0) in ops.calls
    assert escapee == {}


def test_processes_appearing_during_the_grace_get_term_then_kill():
    ops = FakeOps({12: {signal.SIGTERM}}, spawn_during_grace={0.5: 13})
    stopping.stop(ops, group=None, find=ops.find, immediate=False)
    sent_to_13 = [c[2] for c in ops.calls if c[1] == 13]
    assert sent_to_13 == [signal.SIGTERM, signal.SIGKILL]
