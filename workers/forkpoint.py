"""The fork point: a preloaded, single-threaded process that forks one worker per call.

The supervisor forks it once at start-up, before it has any threads. It imports every
executor module, freezes the heap, then waits on a SOCK_SEQPACKET socket for `Spawn`
requests carrying the worker's pipe ends. It reaps its workers and reports each exit status.
When the supervisor goes away it stops its workers (TERM, which they treat as cancellation,
then KILL) and exits.
"""

import ctypes
import gc
import importlib
import os
import resource
import selectors
import signal
import socket
import time

from scv.messages import Exited, Spawned, SpawnFailed, decode_spawn, encode

PR_SET_CHILD_SUBREAPER = 36
MAX_PACKET = 65536
SHUTDOWN_GRACE = 3.0


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _become_worker(sock: socket.socket, wake_fds: tuple[int, int], fds: list[int], memory_bytes: int) -> None:
    """Runs in the forked child; never returns."""
    code = 70
    try:
        sock.close()
        for fd in wake_fds:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.setpgid(0, 0)
        in_fd, out_fd, err_fd = fds
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(err_fd, 2)
        for fd in (devnull, err_fd):
            os.close(fd)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, hard))
        from workers import runtime
        code = runtime.main(in_fd, out_fd)
    except BaseException as exc:     # report, then exit with a status the supervisor shows
        try:
            os.write(2, f"worker start failed: {type(exc).__name__}: {exc}\n".encode())
        except OSError:
            pass
        code = getattr(exc, "code", 70) if isinstance(exc, SystemExit) else 70
    os._exit(code if isinstance(code, int) else 70)


def serve(sock: socket.socket, preload: list[str]) -> None:
    """The fork point's loop; returns when the supervisor has gone and the workers are stopped."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    for name in preload:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()       # keep the preloaded heap shared with the workers instead of copied
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, str] = {}
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            call_id = children.pop(pid, None)
            if call_id is not None:
                try:
                    sock.send(encode(Exited(call_id=call_id, pid=pid, status=status)))
                except OSError:
                    pass

    while True:
        for key, _ in sel.select():
            if key.fd == wake_r:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                reap()
                continue
            try:
                payload, fds, _, _ = socket.recv_fds(sock, MAX_PACKET, 3)
            except OSError:
                payload, fds = b"", []
            if not payload:
                _shutdown(children, reap)
                return
            request = decode_spawn(payload)
            try:
                pid = os.fork()
            except OSError as exc:
                for fd in fds:
                    os.close(fd)
                sock.send(encode(SpawnFailed(call_id=request.call_id, error=f"fork failed: {exc.strerror}")))
                continue
            if pid == 0:
                _become_worker(sock, (wake_r, wake_w), fds, request.memory_bytes)
            for fd in fds:
                os.close(fd)
            children[pid] = request.call_id
            sock.send(encode(Spawned(call_id=request.call_id, pid=pid)))
        reap()


def _shutdown(children: dict[int, str], reap) -> None:
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + SHUTDOWN_GRACE
    while children and time.monotonic() < deadline:
        reap()
        time.sleep(0.02)
    for pid in list(children):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    reap()
