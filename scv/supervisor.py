"""The supervisor: runs each tool call in a fresh worker forked by the fork point.

`Supervisor.run` sends the call, relays progress and approval requests, honours cancellation,
and always ends in a `Result`: a worker that crashes, is killed, runs out of memory or
writes garbage becomes a failed result carrying its exit status and the tail of its stderr.
As a backstop to the worker's own deadline, a worker that outlives the call's timeout by
BACKSTOP_SECONDS is killed together with every process tagged with the call.
"""

import fcntl
import itertools
import os
import selectors
import signal
import socket
import threading
import uuid
from dataclasses import dataclass, field
from typing import Callable

from scv.cancellation import Cancellation
from scv.errors import ProtocolError
from scv.frames import FrameReader, frame
from scv.messages import (ApprovalAnswer, ApprovalRequest, Call, Cancel, Exited, Progress, Result, Spawn,
                          Spawned, SpawnFailed, decode_from_fork_point, decode_from_worker, encode)
from scv import stopping
from scv.oscalls import REAL, ProcessOps

STDERR_TAIL_BYTES = 2048
BACKSTOP_SECONDS = 10.0     # past the call's timeout: the worker's own stop takes at most ~3 s
EXIT_WAIT_SECONDS = 5.0
PIPE_SIZE = 1 << 20
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
PR_SET_CHILD_SUBREAPER = 36


@dataclass
class _Pending:
    pid: int | None = None
    status: int | None = None
    error: str | None = None
    spawned: threading.Event = field(default_factory=threading.Event)
    exited: threading.Event = field(default_factory=threading.Event)


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


class Supervisor:
    """Owns the fork point. Create it before the process starts any thread."""

    def __init__(self, preload: list[str], ops: ProcessOps = REAL):
        self.instance = f"scv-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._ops = ops
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = ops.fork()
        if pid == 0:
            code = 0
            try:
                self._sock.close()
                from workers import forkpoint
                forkpoint.serve(child, preload)
            except BaseException:
                code = 70
            os._exit(code)
        child.close()
        self.fork_point_pid = pid
        self._closed = False
        self._reader = threading.Thread(target=self._read_fork_point, name="scv-forkpoint", daemon=True)
        self._reader.start()

    # --- fork point ---------------------------------------------------------------------------

    def _read_fork_point(self) -> None:
        while True:
            try:
                payload = self._sock.recv(65536)
            except OSError:
                payload = b""
            if not payload:
                with self._lock:
                    for pending in self._pending.values():
                        pending.error = pending.error or "the fork point exited"
                        pending.spawned.set()
                        pending.exited.set()
                return
            message = decode_from_fork_point(payload)
            with self._lock:
                pending = self._pending.get(message.call_id)
            if pending is None:
                continue
            match message:
                case Spawned(pid=pid):
                    pending.pid = pid
                    pending.spawned.set()
                case Exited(status=status):
                    pending.status = status
                    pending.exited.set()
                    with self._lock:
                        self._pending.pop(message.call_id, None)
                case SpawnFailed(error=error):
                    pending.error = error
                    pending.spawned.set()
                    pending.exited.set()

    def new_handle(self) -> tuple[str, str]:
        call_id = f"call-{next(self._ids)}"
        return call_id, f"{self.instance}/{call_id}"

    # --- one call -----------------------------------------------------------------------------

    def run(self, call: Call, call_id: str, *, memory_bytes: int, cancel: Cancellation | None = None,
            on_progress: Callable[[str], None] | None = None,
            on_approval: Callable[[ApprovalRequest], bool] | None = None) -> Result:
        try:
            request = frame(encode(call))
        except ProtocolError as exc:
            return Result(ok=False, value={"error": f"the {call.tool} call is too large to send to a worker ({exc})"})
        pending = _Pending()
        with self._lock:
            self._pending[call_id] = pending
        to_r, to_w = os.pipe2(os.O_CLOEXEC)
        from_r, from_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        try:
            room = fcntl.fcntl(to_w, F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            room = fcntl.fcntl(to_w, F_GETPIPE_SZ)
        # A call that fits goes into the pipe before the worker exists: one round trip fewer.
        early = len(request) <= room
        if early:
            os.write(to_w, request)
        try:
            socket.send_fds(self._sock, [encode(Spawn(call_id=call_id, memory_bytes=memory_bytes))],
                            [to_r, from_w, err_w])
        except OSError as exc:
            for fd in (to_r, to_w, from_r, from_w, err_r, err_w):
                os.close(fd)
            with self._lock:
                self._pending.pop(call_id, None)
            return Result(ok=False, value={"error": f"no worker could be started for {call.tool}: {exc.strerror}"})
        for fd in (to_r, from_w, err_w):
            os.close(fd)
        try:
            if not early:
                os.write(to_w, request)
            return self._relay(call, pending, to_w, from_r, err_r, cancel, on_progress, on_approval)
        except BrokenPipeError:
            return self._relay(call, pending, None, from_r, err_r, cancel, on_progress, on_approval)
        finally:
            for fd in (to_w, from_r, err_r):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _relay(self, call, pending, to_w, from_r, err_r, cancel, on_progress, on_approval) -> Result:
        reader = FrameReader()
        stderr_tail = bytearray()
        result: Result | None = None
        problem: str | None = None
        sel = selectors.DefaultSelector()
        sel.register(from_r, selectors.EVENT_READ, "out")
        sel.register(err_r, selectors.EVENT_READ, "err")
        if cancel is not None:
            sel.register(cancel.fileno(), selectors.EVENT_READ, "cancel")
        now = self._ops.monotonic
        backstop = now() + call.timeout_seconds + BACKSTOP_SECONDS
        open_pipes = {"out", "err"}
        try:
            # Until the worker closes its result pipe (it exits); a worker that ended without a
            # result also gets its stderr read to the end, for the report.
            while "out" in open_pipes or (result is None and "err" in open_pipes):
                left = backstop - now()
                if left <= 0:
                    problem = "did not finish after its deadline and was killed"
                    self._kill_worker(call, pending)
                    backstop = now() + EXIT_WAIT_SECONDS
                    if left < -EXIT_WAIT_SECONDS:
                        break
                    continue
                for key, _ in sel.select(left):
                    if key.data == "cancel":
                        sel.unregister(key.fd)
                        if to_w is not None:
                            try:
                                os.write(to_w, frame(encode(Cancel())))
                            except OSError:
                                pass
                        backstop = min(backstop, now() + stopping.CANCEL_BOUND_SECONDS)
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fd)
                        open_pipes.discard(key.data)
                        if key.data == "out":
                            reader.close()
                        continue
                    if key.data == "err":
                        stderr_tail += chunk
                        del stderr_tail[:-STDERR_TAIL_BYTES]
                        continue
                    for payload in reader.feed(chunk):
                        match decode_from_worker(payload):
                            case Result() as final:
                                result = final
                            case Progress(line=line):
                                if on_progress:
                                    on_progress(line)
                            case ApprovalRequest() as ask:
                                approved = bool(on_approval and on_approval(ask))
                                if to_w is not None:
                                    os.write(to_w, frame(encode(ApprovalAnswer(id=ask.id, approved=approved))))
        except ProtocolError as exc:
            problem = f"broke the message protocol ({exc})"
            self._kill_worker(call, pending)
        finally:
            sel.close()
        if result is not None and problem is None:
            return result
        pending.exited.wait(EXIT_WAIT_SECONDS)
        if pending.error and not pending.pid:
            return Result(ok=False, value={"error": f"no worker could be started for {call.tool}: {pending.error}"})
        tail = stderr_tail.decode("utf-8", "replace").strip()
        status = describe_status(pending.status)
        what = problem or f"ended without a result ({status})"
        self._stop_tagged(call)
        value = {"error": f"the {call.tool} worker {what}", "exit_status": status, "stderr_tail": tail}
        return Result(ok=False, value=value)

    def _kill_worker(self, call: Call, pending: _Pending) -> None:
        pending.spawned.wait(EXIT_WAIT_SECONDS)
        # RUNNING -> KILLED: the worker's group, then anything tagged with the call.
        stopping.stop(self._ops, group=pending.pid or None, find=lambda: self._ops.tagged(call.handle),
                      immediate=True)

    def _stop_tagged(self, call: Call, immediate: bool = False) -> None:
        if self._ops.tagged(call.handle):
            stopping.stop(self._ops, group=None, find=lambda: self._ops.tagged(call.handle), immediate=immediate)

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
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        try:
            os.waitpid(self.fork_point_pid, 0)
        except ChildProcessError:
            pass
        self._reader.join(timeout=1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
