"""A trivial live agent for tests of the live worker seam: it counts its turns, can start a
child process that lives as long as the conversation, waits for cancellation on request, and
can be told to end itself between calls. Imported by name inside the live worker."""

import os
import select
import subprocess

from scv.core.oscalls import TAG_VARIABLE
from workers.runtime import ToolFailure


class EchoAgent:
    def __init__(self, args, ctx):
        self.turns = 0
        self.child = None
        self._idle_r, self._idle_w = os.pipe()
        if args.get("child"):
            env = dict(os.environ, **{TAG_VARIABLE: ctx.call.handle})
            # The conversation's long-lived process, as an ACP server would be.
            self.child = subprocess.Popen(["sleep", "3600"], env=env, process_group=0)

    def turn(self, args, ctx):
        self.turns += 1
        if args.get("fail"):
            raise ToolFailure("asked to fail", turn=self.turns)
        if args.get("wait_for_cancel"):
            ctx.progress("waiting")
            while not ctx.token.check():
                select.select(ctx.token.fds(), [], [])
            return {"turn": self.turns, "cancelled": True}
        if args.get("end_after"):
            os.write(self._idle_w, b"x")     # becomes "gone" as soon as the turn is over
        return {"turn": self.turns, "pid": os.getpid(), "child": self.child.pid if self.child else None,
                "echo": args.get("text")}

    def idle_fds(self):
        return [self._idle_r]

    def on_idle(self):
        os.read(self._idle_r, 64)
        return False

    def close(self):
        if self.child is not None:
            self.child.kill()
            self.child.wait()


def start(args, ctx):
    return EchoAgent(args, ctx)
