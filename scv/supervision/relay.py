"""One call's relay between the supervisor and its worker, as a state machine.

```
RUNNING ──cancel──▶ CANCELLING ──bound passes──▶ KILLED ──pipes close / wait passes──▶ DONE
   │                    │                          ▲
   ├──deadline + backstop passes───────────────────┤
   ├──garbled frame────────────────────────────────┘
   ├──Result─────────────────────────────────────────────────────────────────────────▶ DONE
   └──EOF without a Result──▶ DRAINING (stderr read to its end, bounded) ────────────▶ DONE
```

RUNNING relays progress and approval requests. A cancellation sends `Cancel` and gives the
worker `CANCEL_BOUND_SECONDS` to end the call (its own TERM, grace, KILL and drain); a worker
that outlives that, or the call's timeout plus `BACKSTOP_SECONDS`, is killed. Everything the
relay does to the world goes through its channel, its clock and its `kill` callback, so tests
drive it with an in-memory channel and a fake clock (tests/channel_fakes.py).
"""

import enum
from typing import Callable

import msgspec

from scv.core import stopping
from scv.core.messages import ApprovalAnswer, ApprovalRequest, Cancel, Progress, Result
from scv.core.states import Moves
from scv.supervision.worker_channel import CancelRequested, Channel, Closed, Garbled, Message, Stderr

STDERR_TAIL_BYTES = 2048
BACKSTOP_SECONDS = 10.0     # past the call's timeout: the worker's own stop takes at most ~3 s
EXIT_WAIT_SECONDS = 5.0     # a killed worker's pipes close, a dying worker's stderr ends


class RelayState(enum.Enum):
    RUNNING = "running"
    CANCELLING = "cancelling"
    KILLED = "killed"
    DRAINING = "draining"
    DONE = "done"


RELAY_MOVES = Moves({
    RelayState.RUNNING: {RelayState.CANCELLING, RelayState.KILLED, RelayState.DRAINING, RelayState.DONE},
    RelayState.CANCELLING: {RelayState.KILLED, RelayState.DRAINING, RelayState.DONE},
    RelayState.KILLED: {RelayState.DONE},
    RelayState.DRAINING: {RelayState.DONE},
    RelayState.DONE: set(),
})


class RelayEnd(msgspec.Struct):
    result: Result | None           # the worker's own result, when one arrived and nothing went wrong
    problem: str | None             # what went wrong, as "the <tool> worker <problem>"
    stderr_tail: str


class Relay(msgspec.Struct, kw_only=True):
    channel: Channel
    timeout_seconds: float
    clock: Callable[[], float]
    kill: Callable[[], None]
    on_progress: Callable[[str], None] | None = None
    on_approval: Callable[[ApprovalRequest], bool] | None = None
    cancel_message: Cancel = msgspec.field(default_factory=Cancel)
    state: RelayState = RelayState.RUNNING
    deadline: float = 0.0
    result: Result | None = None
    problem: str | None = None
    stderr: bytearray = msgspec.field(default_factory=bytearray)

    def run(self) -> RelayEnd:
        self.deadline = self.clock() + self.timeout_seconds + BACKSTOP_SECONDS
        while self.state is not RelayState.DONE:
            left = self.deadline - self.clock()
            if left <= 0:
                self._deadline_passed()
                continue
            for event in self.channel.wait(left):
                self._on(event)
                if self.state is RelayState.DONE:
                    break
        tail = self.stderr.decode("utf-8", "replace").strip()
        return RelayEnd(self.result if self.problem is None else None, self.problem, tail)

    # --- transitions --------------------------------------------------------------------------

    def _move(self, state: RelayState, wait: float | None = None) -> None:
        """The one transition function; `wait` bounds how long the new state may last."""
        self.state = RELAY_MOVES.check("a call's relay", self.state, state)
        if wait is not None:
            self.deadline = self.clock() + wait

    def _kill(self, problem: str) -> None:
        self.problem = self.problem or problem
        self.kill()
        # RUNNING/CANCELLING -> KILLED: wait for the pipes of the dead worker to close.
        self._move(RelayState.KILLED, EXIT_WAIT_SECONDS)

    def _deadline_passed(self) -> None:
        match self.state:
            case RelayState.RUNNING:
                self._kill("did not finish after its deadline and was killed")
            case RelayState.CANCELLING:
                self._kill(f"did not stop within {stopping.CANCEL_BOUND_SECONDS:g} s of being cancelled and was "
                           "killed")
            case RelayState.KILLED | RelayState.DRAINING:
                self._move(RelayState.DONE)     # KILLED/DRAINING -> DONE: nothing more will come

    def _on(self, event) -> None:
        match event:
            case Message(message=Result() as final):
                if self.state in (RelayState.RUNNING, RelayState.CANCELLING):
                    self.result = final
                    self._move(RelayState.DONE)     # RUNNING -> DONE
            case Message(message=Progress(line=line)):
                if self.on_progress is not None:
                    self.on_progress(line)
            case Message(message=ApprovalRequest() as ask):
                approved = bool(self.on_approval is not None and self.on_approval(ask))
                if not approved and self.state is RelayState.RUNNING:
                    # A denial may be the cancel itself (a turn cancelled while its request waited):
                    # the worker must hear of the cancel first, so it answers its agent "cancelled".
                    for event in self.channel.wait(0):
                        self._on(event)
                self.channel.send(ApprovalAnswer(id=ask.id, approved=approved))
            case Stderr(chunk=chunk):
                self.stderr += chunk
                del self.stderr[:-STDERR_TAIL_BYTES]
            case CancelRequested():
                if self.state is RelayState.RUNNING:
                    self.channel.send(self.cancel_message)
                    # RUNNING -> CANCELLING: the worker stops its processes within the bound.
                    self._move(RelayState.CANCELLING,
                               min(self.deadline - self.clock(), stopping.CANCEL_BOUND_SECONDS))
            case Garbled(reason=reason):
                if self.state in (RelayState.RUNNING, RelayState.CANCELLING):
                    self._kill(f"broke the message protocol ({reason})")
            case Closed(stream="out"):
                if self.state is RelayState.KILLED:
                    self._move(RelayState.DONE)
                elif self.state in (RelayState.RUNNING, RelayState.CANCELLING):
                    # RUNNING -> DRAINING: it ended without a result; its stderr says why.
                    self._move(RelayState.DRAINING, EXIT_WAIT_SECONDS)
            case Closed(stream="err"):
                if self.state is RelayState.DRAINING:
                    self._move(RelayState.DONE)
