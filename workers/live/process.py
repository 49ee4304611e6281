"""The one process a live agent keeps for a whole conversation (an ACP server, a nested SCV): started
like the CLI runs (private environment, its own process group, tagged with the call that started
it), with a pipe on stdin that SCV holds, recorded as a delegation while it lives, and ended with
the one stop policy.

`pump()` waits once on the process's stdout, stderr and exit together with the caller's own
descriptors (the call's cancellation token) and writes what the caller queued for its stdin as
the pipe takes it, so neither side can stall the other. stderr is only ever kept as a bounded tail.
"""

import os
import selectors
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scv.core import lineage, stopping
from scv.core.oscalls import REAL
from workers.agents import tracking
from workers.agents.capture import Tail
from workers.delegation_records import RecordKeeper
from workers.running import process_runner
from workers.running.process_runner import RunOutcome, RunSpec
from workers.sandbox_call import SandboxedRun

READ_CHUNK = 256 << 10
GRACE_SECONDS = stopping.GRACE_SECONDS      # after stdin closes, before the group is stopped
DRAIN_SECONDS = 0.5                         # output still arriving after the process exited


@dataclass
class Pumped:
    stdout: list[bytes] = field(default_factory=list)
    ready: set[int] = field(default_factory=set)     # caller descriptors that were readable
    exited: bool = False                             # the process has exited (and its stdout ended)


class LiveProcess:
    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], tag: str, run: tracking.DelegatedRun,
                 keeper: RecordKeeper, sandbox: SandboxedRun | None = None):
        """`sandbox` (entered by the caller) confines the process; it is the process's from here on:
        its launcher goes once the process has started, its temporary folder once the process ends."""
        self.run = run
        self.keeper = keeper        # the run's record; `keeper.killed` once scv agents kill stopped it
        self.sandbox = sandbox
        self.link = lineage.last_link(run.parent)
        self.stderr = Tail(2048)
        self.outcome = RunOutcome()
        self.ended = False          # stopped, collected and its record removed
        in_r, in_w = process_runner.pipe()
        out_r, out_w = process_runner.pipe()
        err_r, err_w = process_runner.pipe()
        launcher = sandbox.launcher.spawn if sandbox is not None and sandbox.launcher is not None else None
        spec = RunSpec(argv=argv, cwd=cwd, env=env, timeout_seconds=0, tag=tag, stdin=in_r, merge_stderr=False,
                       launcher=launcher)
        try:
            proc = process_runner.spawn(spec, out_w, err_w)
        except BaseException:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            if sandbox is not None:
                sandbox.__exit__()
            raise
        finally:
            if sandbox is not None:
                # The spawning thread was needed for the spawn only: the process keeps its confinement.
                sandbox.spawned()
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        self.pid = proc.pid
        proc.returncode = 0         # this class waits for it; Popen must never reap it behind our back
        os.set_blocking(in_w, False)
        self.stdin_fd: int | None = in_w
        self.stdout_fd: int | None = out_r
        self.stderr_fd: int | None = err_r
        self.pidfd: int | None = os.pidfd_open(self.pid)
        self.started_at = time.monotonic()
        tracking.started(keeper, run, self.pid)

    # --- state -------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self.ended and self.outcome.exit_code is None and self.outcome.signal is None

    def fds(self) -> list[int]:
        """What to watch between turns: output, and the exit."""
        return [fd for fd in (self.stdout_fd, self.stderr_fd, self.pidfd) if fd is not None]

    def update_record(self, **changes) -> None:
        self.keeper.update(self.run.handle, **changes)

    def exit_text(self) -> str:
        if self.outcome.signal:
            return f"was killed by {self.outcome.signal}"
        return f"exited with status {self.outcome.exit_code}"

    # --- waiting -----------------------------------------------------------------------------

    def flush(self, out: bytearray) -> None:
        """Writes as much of `out` to stdin as the pipe takes now (what is written is removed). A
        process that closed its stdin gets nothing more: `out` is dropped."""
        while out and self.stdin_fd is not None:
            try:
                written = os.write(self.stdin_fd, out)
            except BlockingIOError:
                return
            except OSError:
                self.close_stdin()
                break
            del out[:written]
        if self.stdin_fd is None:
            out.clear()

    def pump(self, timeout: float | None, watch: list[int] = (), out: bytearray | None = None) -> Pumped:
        """One wait of at most `timeout` seconds, writing `out` (the caller's queued lines for the
        process's stdin) as the pipe takes it."""
        result = Pumped()
        if out:
            self.flush(out)
        selector = selectors.DefaultSelector()
        try:
            for fd, tag in ((self.stdout_fd, "out"), (self.stderr_fd, "err"), (self.pidfd, "exit")):
                if fd is not None:
                    selector.register(fd, selectors.EVENT_READ, tag)
            for fd in watch:
                selector.register(fd, selectors.EVENT_READ, "watch")
            if out and self.stdin_fd is not None:
                selector.register(self.stdin_fd, selectors.EVENT_WRITE, "in")
            events = selector.select(None if timeout is None else max(0.0, timeout))
        finally:
            selector.close()
        for key, _ in events:
            if key.data == "out":
                chunk = os.read(key.fd, READ_CHUNK)
                if chunk:
                    result.stdout.append(chunk)
                else:
                    self._close_fd("stdout_fd")
            elif key.data == "err":
                self._read_stderr()
            elif key.data == "exit":
                self._collect()
            elif key.data == "watch":
                result.ready.add(key.fd)
            elif key.data == "in":
                self.flush(out)
        if not self.alive:
            result.stdout.extend(self._drain())
            result.exited = True
        return result

    def pump_idle(self, out: bytearray | None, on_output: Callable[[list[bytes], bool], None]) -> bool:
        """Output between calls, given to `on_output(chunks, exited)`; False once the process is
        gone (collected, its group and everything tagged stopped, its record removed)."""
        if not self.alive:
            self.forget()
            return False
        pumped = self.pump(0, (), out)
        on_output(pumped.stdout, pumped.exited)
        if pumped.exited:
            self.forget()
            return False
        return True

    def _read_stderr(self) -> None:
        if self.stderr_fd is None:
            return
        try:
            chunk = os.read(self.stderr_fd, READ_CHUNK)
        except BlockingIOError:
            return
        if chunk:
            self.stderr.feed(chunk)
        else:
            self._close_fd("stderr_fd")

    def _drain(self) -> list[bytes]:
        """After the exit: what is still in the pipes (a descendant holding them is not waited for)."""
        chunks = []
        end = time.monotonic() + DRAIN_SECONDS
        while (self.stdout_fd is not None or self.stderr_fd is not None) and time.monotonic() < end:
            selector = selectors.DefaultSelector()
            for fd in (self.stdout_fd, self.stderr_fd):
                if fd is not None:
                    selector.register(fd, selectors.EVENT_READ)
            events = selector.select(max(0.0, end - time.monotonic()))
            selector.close()
            if not events:
                break
            for key, _ in events:
                if key.fd == self.stdout_fd:
                    chunk = os.read(key.fd, READ_CHUNK)
                    if chunk:
                        chunks.append(chunk)
                    else:
                        self._close_fd("stdout_fd")
                else:
                    self._read_stderr()
        return chunks

    def _collect(self) -> bool:
        """Reaps the process if it has exited (only this pid: the caller may have other children)."""
        if not self.alive:
            return True
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            self.outcome.exit_code = -1
            return True
        if pid == 0:
            return False
        process_runner.note_status(self.outcome, status)
        # EXITED: the pidfd has said all it can.
        self._close_fd("pidfd")
        return True

    def _close_fd(self, name: str) -> None:
        fd = getattr(self, name)
        if fd is not None:
            os.close(fd)
            setattr(self, name, None)

    # --- ending ------------------------------------------------------------------------------

    def close_stdin(self) -> None:
        self._close_fd("stdin_fd")

    def shutdown(self, grace: float = GRACE_SECONDS) -> None:
        """Closes stdin, gives the process `grace` seconds to exit on its own, then stops its group
        and every process tagged with the run (TERM, then KILL), collects it and removes its record."""
        if self.ended:
            return
        self.close_stdin()
        end = time.monotonic() + grace
        while not self._collect() and time.monotonic() < end:
            selector = selectors.DefaultSelector()
            selector.register(self.pidfd, selectors.EVENT_READ)
            selector.select(max(0.0, end - time.monotonic()))
            selector.close()
        # RUNNING -> STOPPING: the group (if the leader still runs) and whatever carries the run's link.
        stopping.stop(REAL, group=self.pid if self.alive else None, find=lambda: REAL.in_chain(self.link),
                      immediate=False, reap=self._collect)
        if self.alive:
            # KILL went to the group: the leader's exit is imminent.
            stopping.stop(REAL, group=self.pid, find=lambda: [], immediate=True)
            try:
                _, status = os.waitpid(self.pid, 0)
                process_runner.note_status(self.outcome, status)
            except ChildProcessError:
                self.outcome.exit_code = -1
        self.forget()

    def forget(self) -> None:
        """The process is gone: close every pipe, stop what it left tagged, remove the record."""
        if self.ended:
            return
        self._collect()
        for name in ("stdin_fd", "stdout_fd", "stderr_fd", "pidfd"):
            self._close_fd(name)
        if self.sandbox is not None:
            self.sandbox.__exit__()         # its temporary folder
        self.ended = True
        tracking.ended(self.keeper, self.run, self.pid, self.outcome.exit_code, self.outcome.signal)
