"""The supervisor: owns the fork point and runs each tool call in a worker it forks.

`Supervisor.run` runs one call in a fresh worker used once; `Supervisor.start_live` starts a
live worker that serves every call of one conversation (scv/supervision/live_worker.py). Either way the call
goes through one `Relay` (scv/supervision/relay.py) over the worker's `PipeChannel` and always ends in a
`Result`: a worker that crashes, is killed, runs out of memory or writes garbage becomes a
failed result carrying its exit status and the tail of its stderr.
"""

import fcntl
import itertools
import os
import signal
import socket
import sys
import threading
import uuid
from _thread import start_new_thread
from typing import Callable

import msgspec

from scv.core import stopping
from scv.core.cancellation import Cancellation
from scv.core.errors import ProtocolError
from scv.core.frames import frame
from scv.core.messages import (ApprovalRequest, Call, Cancel, Exited, Result, Spawn, Spawned, SpawnFailed,
                               decode_from_fork_point, encode)
from scv.core.oscalls import REAL, ProcessOps
from scv.core.sandbox.policy import preparation
from scv.supervision.relay import EXIT_WAIT_SECONDS, Relay, RelayEnd
from scv.supervision.worker_channel import PipeChannel

PIPE_SIZE = 1 << 20
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
PR_SET_CHILD_SUBREAPER = 36
ONE_CALL, LIVE = "call", "live"     # the two kinds of worker the fork point starts
SPAWN_PACKET_LIMIT = 32768      # the fork point reads packets of up to 64 KiB


class Worker(msgspec.Struct):
    """One forked worker as the fork point reports it: its pid once spawned, its wait status
    once it exited, or why it could not be started."""
    pid: int | None = None
    status: int | None = None
    error: str | None = None
    spawned: threading.Event = msgspec.field(default_factory=threading.Event)
    exited: threading.Event = msgspec.field(default_factory=threading.Event)


def describe_status(status: int | None) -> str:
    if status is None:
        return "an unknown status"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _spawn_packet(worker_id: str, memory_bytes: int, kind: str, prepare: str, plan: dict | None) -> bytes:
    """The Spawn request; the plan rides along only while the packet stays well within one
    SOCK_SEQPACKET packet (a spare then applies it ahead only when it is small)."""
    packet = encode(Spawn(call_id=worker_id, memory_bytes=memory_bytes, kind=kind, prepare=prepare, plan=plan))
    if plan is not None and len(packet) > SPAWN_PACKET_LIMIT:
        packet = encode(Spawn(call_id=worker_id, memory_bytes=memory_bytes, kind=kind, prepare=prepare))
    return packet


class Supervisor:
    """Owns the fork point. Create it before the process starts any thread. `refill_spare`
    False: a command that runs one call; no spare is forked to wait for a next one. `gated`:
    the fork point waits for `release()` before it preloads, so a command's own start (up to
    its first model request) does not share the machine with the preload; the first call
    releases it too."""

    def __init__(self, preload: list[str], ops: ProcessOps = REAL, *, refill_spare: bool = True,
                 gated: bool = False):
        self.instance = f"scv-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._ops = ops
        self._ids = itertools.count(1)
        self._workers: dict[str, Worker] = {}
        self._lock = threading.Lock()
        self._sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The gate: the fork point preloads once this pipe's write end is closed (or this process is gone).
        gate_r, self._gate_w = os.pipe2(os.O_CLOEXEC) if gated else (None, None)
        self._release_lock = threading.Lock()
        pid = ops.fork()
        if pid == 0:
            code = 0
            try:
                # Until the fork point's own handler (workers/forkpoint.py): close() may send it.
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)
                self._sock.close()
                if self._gate_w is not None:
                    os.close(self._gate_w)
                from workers import forkpoint       # the one place scv/ reaches into workers/
                forkpoint.serve(child, preload, refill_spare, gate=gate_r)
            except BaseException:
                code = 70
            os._exit(code)
        child.close()
        if gate_r is not None:
            os.close(gate_r)
        self.fork_point_pid = pid
        self._closed = False
        # A bare thread: threading.Thread.start would wait until the new thread is scheduled,
        # which on a busy machine costs a short command milliseconds for nothing.
        self._reader_done = threading.Event()
        start_new_thread(self._read_fork_point, ())

    def release(self) -> None:
        """Lets a gated fork point preload now; idempotent, from any thread."""
        with self._release_lock:
            if self._gate_w is not None:
                os.close(self._gate_w)
                self._gate_w = None

    # --- fork point ---------------------------------------------------------------------------

    def _read_fork_point(self) -> None:
        try:
            self._read_reports()
        finally:
            self._reader_done.set()

    def _read_reports(self) -> None:
        while True:
            try:
                payload = self._sock.recv(65536)
            except OSError:
                payload = b""
            if not payload:
                with self._lock:
                    for worker in self._workers.values():
                        worker.error = worker.error or "the fork point exited"
                        worker.spawned.set()
                        worker.exited.set()
                return
            try:
                message = decode_from_fork_point(payload)
            except ProtocolError as exc:
                print(f"scv: the fork point sent a message that cannot be decoded ({exc})", file=sys.stderr,
                      flush=True)
                continue
            with self._lock:
                worker = self._workers.get(message.call_id)
            if worker is None:
                continue
            match message:
                case Spawned(pid=pid):
                    worker.pid = pid
                    worker.spawned.set()
                case Exited(status=status):
                    worker.status = status
                    worker.exited.set()
                    with self._lock:
                        self._workers.pop(message.call_id, None)
                case SpawnFailed(error=error):
                    worker.error = error
                    worker.spawned.set()
                    worker.exited.set()

    def new_handle(self) -> tuple[str, str]:
        call_id = f"call-{next(self._ids)}"
        return call_id, f"{self.instance}/{call_id}"

    def new_live_handle(self) -> tuple[str, str]:
        worker_id = f"live-{next(self._ids)}"
        return worker_id, f"{self.instance}/{worker_id}"

    def spawn(self, worker_id: str, memory_bytes: int, kind: str,
              first: bytes = b"", prepare: str = "", plan: dict | None = None) -> tuple[Worker, PipeChannel] | str:
        """Asks the fork point for a worker; `first` (framed bytes) is written to its input before
        it exists when the pipe has room for it. Returns the worker and its channel, or why not."""
        self.release()      # a call needs the fork point ready now
        worker = Worker()
        with self._lock:
            self._workers[worker_id] = worker
        to_r, to_w = os.pipe2(os.O_CLOEXEC)
        from_r, from_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        try:
            room = fcntl.fcntl(to_w, F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            room = fcntl.fcntl(to_w, F_GETPIPE_SZ)
        channel = PipeChannel(to_w, from_r, err_r)
        # A call that fits goes into the pipe before the worker exists: one round trip fewer.
        early = bool(first) and len(first) <= room
        if early:
            channel.send_raw(first)
        try:
            socket.send_fds(self._sock, [_spawn_packet(worker_id, memory_bytes, kind, prepare, plan)],
                            [to_r, from_w, err_w])
        except OSError as exc:
            channel.close()
            for fd in (to_r, from_w, err_w):
                os.close(fd)
            with self._lock:
                self._workers.pop(worker_id, None)
            return exc.strerror or str(exc)
        for fd in (to_r, from_w, err_w):
            os.close(fd)
        if first and not early:
            channel.send_raw(first)
        return worker, channel

    # --- one call -----------------------------------------------------------------------------

    def run(self, call: Call, call_id: str, *, memory_bytes: int, cancel: Cancellation | None = None,
            on_progress: Callable[[str], None] | None = None,
            on_approval: Callable[[ApprovalRequest], bool] | None = None) -> Result:
        """Runs `call` in a fresh worker that exits after it."""
        try:
            request = frame(encode(call))
        except ProtocolError as exc:
            return Result(ok=False, value={"error": f"the {call.tool} call is too large to send to a worker ({exc})"})
        plan = call.options.get("sandbox")
        spawned = self.spawn(call_id, memory_bytes, ONE_CALL, first=request, prepare=preparation(plan), plan=plan)
        if isinstance(spawned, str):
            return Result(ok=False, value={"error": f"no worker could be started for {call.tool}: {spawned}"})
        worker, channel = spawned
        try:
            end = self.relay(call, worker, channel, cancel=cancel, on_progress=on_progress, on_approval=on_approval)
        finally:
            channel.close()
        return self.finish(call, worker, end)

    def relay(self, call: Call, worker: Worker, channel: PipeChannel, *, cancel: Cancellation | None,
              on_progress: Callable[[str], None] | None,
              on_approval: Callable[[ApprovalRequest], bool] | None) -> RelayEnd:
        channel.listen_for_cancel(cancel.fileno() if cancel is not None else None)
        try:
            return Relay(channel=channel, timeout_seconds=call.timeout_seconds, clock=self._ops.monotonic,
                         kill=lambda: self.kill(worker, call.handle), on_progress=on_progress,
                         on_approval=on_approval, cancel_message=Cancel(id=call.id)).run()
        finally:
            channel.listen_for_cancel(None)

    def finish(self, call: Call, worker: Worker, end: RelayEnd) -> Result:
        """The call's result: the worker's own, or a failed one saying what happened to it."""
        if end.result is not None:
            return end.result
        worker.exited.wait(EXIT_WAIT_SECONDS)
        if worker.error and not worker.pid:
            return Result(ok=False, value={"error": f"no worker could be started for {call.tool}: {worker.error}"})
        status = describe_status(worker.status)
        what = end.problem or f"ended without a result ({status})"
        self.stop_tagged(call.handle)
        value = {"error": f"the {call.tool} worker {what}", "exit_status": status, "stderr_tail": end.stderr_tail}
        return Result(ok=False, value=value)

    def kill(self, worker: Worker, handle: str) -> None:
        worker.spawned.wait(EXIT_WAIT_SECONDS)
        # RUNNING -> KILLED: the worker's group, then anything tagged with the call.
        stopping.stop(self._ops, group=worker.pid or None, find=lambda: self._ops.tagged(handle), immediate=True)

    def stop_tagged(self, handle: str, immediate: bool = False) -> None:
        if self._ops.tagged(handle):
            stopping.stop(self._ops, group=None, find=lambda: self._ops.tagged(handle), immediate=immediate)

    # --- descendants re-parented to this process ----------------------------------------------

    def adopt_orphans(self) -> bool:
        """Makes this process a child subreaper (Linux), so descendants a delegated agent leaves
        behind re-parent here rather than to init, and collects those that exit (on SIGCHLD).
        Call from the main thread of a command's process; False where the kernel refuses."""
        import ctypes
        try:
            if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                return False
        except (OSError, AttributeError):
            return False
        signal.signal(signal.SIGCHLD, lambda signum, frame: self.collect_orphans())
        return True

    def collect_orphans(self) -> list[int]:
        """Reaps exited children this process did not start: ones outside its own process group
        other than the fork point (its own children, such as a test's, stay in its group)."""
        mine = os.getpgrp()
        reaped = []
        for pid in self._ops.children(os.getpid()):
            if pid == self.fork_point_pid:
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # fields[0] is the state, fields[2] the process group
            if fields[0] != b"Z" or int(fields[2]) == mine:
                continue
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped.append(pid)
            except ChildProcessError:
                pass
        return reaped

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.release()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        # A fork point still preloading abandons the module it is importing, so that it sees the
        # EOF now rather than after lxml's import (up to ~80 ms of every `scv exec`'s end).
        self._ops.signal(self.fork_point_pid, signal.SIGUSR1)
        try:
            os.waitpid(self.fork_point_pid, 0)
        except ChildProcessError:
            pass
        self._reader_done.wait(timeout=1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
