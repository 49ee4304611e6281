"""An in-memory worker channel and a fake clock, to drive the relay (scv/supervision/relay.py) without
processes: the channel hands out scripted events at scripted times and records what is sent."""

from dataclasses import dataclass, field

from scv.supervision.worker_channel import CancelRequested


@dataclass
class FakeClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeChannel:
    clock: FakeClock
    script: list[tuple[float, object]]          # (time, event), in time order
    sent: list[object] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    cancel_at: float | None = None              # when a listened-to cancellation fires
    listening: bool = False
    accepts: bool = True                        # False: the worker's input is gone

    def send(self, message) -> bool:
        self.sent.append(message)
        return self.accepts

    def listen_for_cancel(self, fd) -> None:
        self.listening = fd is not None

    def wait(self, timeout: float) -> list[object]:
        self.waits.append(timeout)
        due = [at for at, _ in self.script]
        if self.listening and self.cancel_at is not None:
            due.append(self.cancel_at)
        until = min([self.clock.now + timeout] + [at for at in due if at >= self.clock.now])
        self.clock.now = max(self.clock.now, until)
        events = []
        while self.script and self.script[0][0] <= self.clock.now:
            events.append(self.script.pop(0)[1])
        if self.listening and self.cancel_at is not None and self.cancel_at <= self.clock.now:
            self.cancel_at = None
            events.append(CancelRequested())
        return events

    def close(self) -> None:
        pass
