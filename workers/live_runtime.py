"""A live worker's life: every call of one conversation, one at a time, then exit.

The first `Call` names a factory as its executor (`"module:function"`); the factory's
`LiveAgent` then serves that call and every later one. Between calls the worker waits on its
input and on the descriptors the agent names, so the agent keeps reading its own events (a
nested SCV's background jobs) while no call runs. EOF on the input (the supervisor closed the
conversation) or SIGTERM (the fork point stopping) closes the agent, which stops everything it
started; an agent that reports itself gone ends the worker, which ends the conversation.

```
IDLE ──Call──▶ SERVING ──Result sent──▶ IDLE ──EOF / TERM──▶ CLOSING ──agent closed──▶ exit
  └──agent gone (on_idle is False)──────────────────────────────────────────────────▶ exit
```
"""

import os
import selectors
import signal
from typing import Protocol

from scv.core.frames import FrameReader
from scv.core.messages import AgentResult, Call, Result
from workers.running.cancel_token import CancelToken
from workers.runtime import WorkerContext, open_workspace, read_call, resolve, run_guarded, send


class LiveAgent(Protocol):
    def turn(self, args: dict, ctx: WorkerContext) -> AgentResult:
        """One call of the conversation; raise ToolFailure to fail it."""

    def idle_fds(self) -> list[int]:
        """Descriptors to watch between calls ([] for none)."""

    def on_idle(self) -> bool:
        """One of idle_fds() is readable while no call runs; False: the agent is gone."""

    def close(self) -> None:
        """The conversation ended: stop everything the agent started."""


def serve(in_fd: int, out_fd: int) -> int:
    reader = FrameReader()
    pending: list[bytes] = []
    agent: LiveAgent | None = None
    stop_r, stop_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def on_term(signum, frame):
        try:
            os.write(stop_w, b"t")
        except OSError:
            pass

    try:
        while True:
            signal.signal(signal.SIGTERM, on_term)
            # IDLE: the next call, the end of the conversation, or the agent's own events.
            if not pending and not _input_ready(in_fd, stop_r, agent):
                if agent is not None and not agent.on_idle():
                    return 0        # IDLE -> exit: the agent is gone; so is the conversation
                continue
            if _stopped(stop_r):
                return 0
            os.set_blocking(in_fd, True)
            call, pending = read_call(in_fd, reader, pending)
            if call is None:
                return 0            # IDLE -> CLOSING: the supervisor ended the conversation
            os.set_blocking(in_fd, False)
            token = CancelToken(in_fd, reader, pending, call_id=call.id)
            pending = []
            if agent is None:
                agent, result = _start(call, token, out_fd)
            else:
                result = _turn(agent, call, token, out_fd)
            pending = token.later
            token.close()
            send(out_fd, result)    # SERVING -> IDLE
            if token.closed_input or token.terminated or agent is None:
                return 0            # nobody will send another call
    finally:
        if agent is not None:
            agent.close()
        for fd in (stop_r, stop_w):
            os.close(fd)


def _input_ready(in_fd: int, stop_r: int, agent: LiveAgent | None) -> bool:
    """Blocks until the input or the stop pipe is readable (True) or an idle descriptor is (False)."""
    sel = selectors.DefaultSelector()
    try:
        sel.register(in_fd, selectors.EVENT_READ, "input")
        sel.register(stop_r, selectors.EVENT_READ, "input")
        for fd in (agent.idle_fds() if agent is not None else []):
            sel.register(fd, selectors.EVENT_READ, "agent")
        ready = {key.data for key, _ in sel.select()}
        return "input" in ready
    finally:
        sel.close()


def _stopped(stop_r: int) -> bool:
    try:
        return bool(os.read(stop_r, 64))
    except BlockingIOError:
        return False


def _context(call: Call, token: CancelToken, out_fd: int) -> WorkerContext | Result:
    workspace_fd = open_workspace(call)
    if isinstance(workspace_fd, Result):
        return workspace_fd
    return WorkerContext(call=call, workspace_fd=workspace_fd, token=token, out_fd=out_fd)


def _start(call: Call, token: CancelToken, out_fd: int) -> tuple[LiveAgent | None, Result]:
    ctx = _context(call, token, out_fd)
    if isinstance(ctx, Result):
        return None, ctx
    started: list[LiveAgent] = []

    def first_turn() -> dict:
        started.append(resolve(call.executor)(call.args, ctx))
        return started[0].turn(call.args, ctx)

    try:
        result = run_guarded(call, first_turn)
    finally:
        os.close(ctx.workspace_fd)
    return (started[0] if started else None), result


def _turn(agent: LiveAgent, call: Call, token: CancelToken, out_fd: int) -> Result:
    ctx = _context(call, token, out_fd)
    if isinstance(ctx, Result):
        return ctx
    try:
        return run_guarded(call, lambda: agent.turn(call.args, ctx))
    finally:
        os.close(ctx.workspace_fd)
