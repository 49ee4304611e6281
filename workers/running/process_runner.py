"""Runs one child command for a tool call: its own process group, stdin from /dev/null,
output drained as it arrives, a deadline, cancellation, and cleanup of every descendant.

The worker is a child subreaper, so descendants that leave the group with `setsid` are
re-parented to it instead of to init and are still found (through /proc) when the call ends.
After the group leader exits, output is drained for a short linger; whatever still runs is
then stopped with the kill policy, and draining is bounded so a background child holding the
pipe cannot keep the call alive.
"""

import fcntl
import os
import resource
import selectors
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Callable

from scv.core import stopping
from scv.core.oscalls import REAL, TAG_VARIABLE, ProcessOps
from workers.running.cancel_token import CancelToken

READ_CHUNK = 128 << 10      # larger reads were slower here: the first flood in a process paid ~2x
PIPE_SIZE = 1 << 20
LINGER_SECONDS = 0.2       # output still arriving right after the leader exits
DRAIN_SECONDS = 1.0        # after the last stop, how long to wait for the pipes to close
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)



@dataclass
class RunOutcome:
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    cancelled: bool = False
    stopped_descendants: int = 0


@dataclass
class RunSpec:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    timeout_seconds: float
    tag: str                                     # the call's handle, set as SCV_CALL
    stdin: int | None = subprocess.DEVNULL
    merge_stderr: bool = True
    # Sinks get memoryviews of one reused buffer instead of new bytes (they copy what they keep):
    # a flood of output then costs no allocation per read.
    chunk_views: bool = False
    extra: dict = field(default_factory=dict)    # passed through to Popen (pass_fds, ...)
    on_start: Callable[[int], None] | None = None  # called with the leader's pid once it runs
    # Starts the Popen inside a sandbox (workers/sandbox_linux.py: Launcher.spawn). A sandboxed
    # command also gets its own session, so it has no controlling terminal to reach.
    launcher: Callable[[Callable[[], subprocess.Popen]], subprocess.Popen] | None = None


def pipe() -> tuple[int, int]:
    """A close-on-exec pipe, enlarged so a flood of output costs fewer wake-ups."""
    r, w = os.pipe2(os.O_CLOEXEC)
    try:
        fcntl.fcntl(r, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    return r, w


def spawn(spec: RunSpec, out_w: int, err_w: int) -> subprocess.Popen:
    """The command in its own process group, tagged with the call, with the worker's memory ceiling
    lifted; live agents start their long-running processes through this too."""
    env = dict(spec.env)
    env[TAG_VARIABLE] = spec.tag
    # The worker's own memory ceiling must not bind the command (runtimes such as node or the
    # JVM reserve large address ranges): lift it for the fork, then put it back.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    # A new session is also a new process group led by the command, as process_group=0 makes it.
    grouping = {"start_new_session": True} if spec.launcher is not None else {"process_group": 0}

    def start() -> subprocess.Popen:
        return subprocess.Popen(spec.argv, cwd=spec.cwd, env=env, stdin=spec.stdin, stdout=out_w,
                                stderr=err_w, close_fds=True, **grouping, **spec.extra)

    try:
        return spec.launcher(start) if spec.launcher is not None else start()
    finally:
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def note_status(outcome: RunOutcome, status: int) -> None:
    if os.WIFSIGNALED(status):
        outcome.signal = signal.Signals(os.WTERMSIG(status)).name
    else:
        outcome.exit_code = os.waitstatus_to_exitcode(status)


def run(spec: RunSpec, token: CancelToken, on_stdout: Callable[[bytes], None],
        on_stderr: Callable[[bytes], None] | None = None, ops: ProcessOps = REAL) -> RunOutcome:
    """Runs the command to its end (or deadline, or cancellation); raises OSError if it cannot start."""
    running = _Running(spec, token, on_stdout, on_stderr, ops)
    try:
        running.follow_leader()
        running.drain(LINGER_SECONDS)       # the leader is gone (or being killed): what still arrives
        running.stop_left_behind()
        running.drain(DRAIN_SECONDS)
        running.collect_leader()
    finally:
        running.close()
    return running.outcome


class _Running:
    """One command from its start to its collection: its pipes, its exit descriptor and the
    call's cancel token, watched by one selector."""

    def __init__(self, spec: RunSpec, token: CancelToken, on_stdout: Callable[[bytes], None],
                 on_stderr: Callable[[bytes], None] | None, ops: ProcessOps):
        self.token, self.ops, self.me = token, ops, os.getpid()
        self.outcome = RunOutcome()
        out_r, out_w = pipe()
        err_r, err_w = (out_r, out_w) if spec.merge_stderr or on_stderr is None else pipe()
        try:
            self.proc = spawn(spec, out_w, err_w)
        except BaseException:
            for fd in {out_r, out_w, err_r, err_w}:
                os.close(fd)
            raise
        for fd in {out_w, err_w}:
            os.close(fd)
        if spec.on_start is not None:
            spec.on_start(self.proc.pid)
        self.sinks = {out_r: on_stdout}
        if err_r != out_r:
            self.sinks[err_r] = on_stderr
        self.pidfd = os.pidfd_open(self.proc.pid)
        self.sel = selectors.DefaultSelector()
        for fd in self.sinks:
            self.sel.register(fd, selectors.EVENT_READ, "pipe")
        self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        for fd in token.fds():
            self.sel.register(fd, selectors.EVENT_READ, "token")
        self.buffer = bytearray(READ_CHUNK) if spec.chunk_views else None
        self.view = memoryview(self.buffer) if self.buffer is not None else None
        self.deadline = ops.monotonic() + spec.timeout_seconds

    def find(self) -> list[int]:
        return self.ops.descendants(self.me)

    def reap(self) -> dict[int, int]:
        statuses = self.ops.reap()
        if self.proc.pid in statuses and self.proc.returncode is None:
            note_status(self.outcome, statuses[self.proc.pid])
            self.proc.returncode = statuses[self.proc.pid]
        return statuses

    def stop(self, immediate: bool) -> None:
        stopping.stop(self.ops, group=self.proc.pid, find=self.find, immediate=immediate, reap=self.reap)

    def read_ready(self, timeout: float | None) -> list:
        events = self.sel.select(timeout)
        for key, _ in events:
            if key.data == "pipe":
                if self.view is not None:
                    chunk = self.view[:os.readv(key.fd, [self.buffer])]
                else:
                    chunk = os.read(key.fd, READ_CHUNK)
                if chunk:
                    self.sinks[key.fd](chunk)
                else:
                    self.sel.unregister(key.fd)
                    os.close(key.fd)
                    del self.sinks[key.fd]
        return events

    def follow_leader(self) -> None:
        """Until the leader exits, its deadline passes (KILL at once), or the call is cancelled
        (TERM, then KILL after the grace)."""
        while self.proc.returncode is None:
            left = self.deadline - self.ops.monotonic()
            if left <= 0:
                # RUNNING -> KILLED (deadline)
                self.outcome.timed_out = True
                self.stop(immediate=True)
                return
            for key, _ in self.read_ready(left):
                if key.data == "exit":
                    self.reap()
                elif key.data == "token" and self.token.check():
                    # RUNNING -> STOPPING (cancelled)
                    self.outcome.cancelled = True
                    self.stop(immediate=False)
            if self.outcome.cancelled:
                return

    def drain(self, seconds: float) -> None:
        end = self.ops.monotonic() + seconds
        while self.sinks and self.ops.monotonic() < end:
            self.read_ready(max(0.0, end - self.ops.monotonic()))

    def stop_left_behind(self) -> None:
        left_behind = self.find()
        if left_behind:
            # FINISHED -> STOPPING (descendants outlived the leader)
            self.outcome.stopped_descendants = len(left_behind)
            self.stop(immediate=False)

    def collect_leader(self) -> None:
        while self.proc.returncode is None:
            # KILL was sent: the leader's exit is imminent.
            os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)
            self.reap()

    def close(self) -> None:
        self.sel.close()
        os.close(self.pidfd)
        for fd in list(self.sinks):
            os.close(fd)
