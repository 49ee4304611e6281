"""A live worker: one worker process that serves every call of one conversation.

The conversation that starts it owns it (scv/agents/conversations.py) and closes it when the
conversation is forgotten, expires or its session ends. Closing sends EOF on the worker's
input; the worker's agent then stops everything it started (its own grace included) and the
worker exits; one that has not exited within a cancelled call's bound is killed with everything
tagged with the worker's handle, by the one stop policy.

```
OPEN ──call()──▶ BUSY ──result──▶ OPEN ──close()──▶ CLOSED
  │                └──worker died / killed──▶ GONE ──close()──▶ CLOSED
  └──worker exited between calls (its agent is gone)──▶ GONE
```
"""

import enum
import threading
from typing import Callable

from scv.core import stopping
from scv.core.cancellation import Cancellation
from scv.core.errors import WorkerLost
from scv.core.messages import ApprovalRequest, Call, Result
from scv.core.states import Moves
from scv.supervision.supervisor import LIVE, Supervisor


class LiveState(enum.Enum):
    OPEN = "open"
    BUSY = "busy"
    GONE = "gone"
    CLOSED = "closed"


LIVE_MOVES = Moves({LiveState.OPEN: {LiveState.BUSY, LiveState.GONE, LiveState.CLOSED},
                    LiveState.BUSY: {LiveState.OPEN, LiveState.GONE},
                    LiveState.GONE: {LiveState.CLOSED},
                    LiveState.CLOSED: set()})


class LiveWorker:
    def __init__(self, supervisor: Supervisor, memory_bytes: int):
        self._supervisor = supervisor
        self.id, self.handle = supervisor.new_live_handle()
        spawned = supervisor.spawn(self.id, memory_bytes, LIVE)
        if isinstance(spawned, str):
            raise WorkerLost(f"no live worker could be started: {spawned}")
        self._worker, self._channel = spawned
        self._lock = threading.Lock()
        self.state = LiveState.OPEN

    def _move(self, to: LiveState) -> None:
        """The one transition function (the moves are LIVE_MOVES)."""
        self.state = LIVE_MOVES.check(f"live worker {self.handle}", self.state, to)

    @property
    def pid(self) -> int | None:
        # The fork point reports the pid on its own socket, which a first result can overtake.
        self._worker.spawned.wait(stopping.CANCEL_BOUND_SECONDS)
        return self._worker.pid

    def alive(self) -> bool:
        """Whether the worker still runs and can take a call."""
        if self.state is LiveState.OPEN and self._worker.exited.is_set():
            self._move(LiveState.GONE)     # OPEN -> GONE: it exited between calls
        return self.state in (LiveState.OPEN, LiveState.BUSY)

    def call(self, call: Call, *, cancel: Cancellation | None = None,
             on_progress: Callable[[str], None] | None = None,
             on_approval: Callable[[ApprovalRequest], bool] | None = None) -> Result:
        """One call of the conversation. Raises WorkerLost when the worker is gone before it;
        a worker that dies during it gives the failed result and leaves the worker GONE."""
        with self._lock:
            if not self.alive():
                raise WorkerLost("the live worker has exited")
            if not self._channel.send(call):
                self._move(LiveState.GONE)
                raise WorkerLost("the live worker has exited")
            self._move(LiveState.BUSY)     # OPEN -> BUSY
            end = self._supervisor.relay(call, self._worker, self._channel, cancel=cancel,
                                         on_progress=on_progress, on_approval=on_approval)
            if end.result is not None:
                self._move(LiveState.OPEN)     # BUSY -> OPEN
                return end.result
            self._move(LiveState.GONE)     # BUSY -> GONE: it died, or was killed past its deadline
            return self._supervisor.finish(call, self._worker, end)

    def close(self) -> None:
        """Ends the conversation's worker and everything it started; safe to call twice."""
        with self._lock:
            if self.state is LiveState.CLOSED:
                return
            self._move(LiveState.CLOSED)   # OPEN/GONE -> CLOSED
            self._channel.close_input()
            if not self._worker.exited.wait(stopping.CANCEL_BOUND_SECONDS):
                self._supervisor.kill(self._worker, self.handle)
            else:
                self._supervisor.stop_tagged(self.handle, immediate=True)
            self._channel.close()
