"""The fork point: a preloaded, single-threaded process that forks one worker per call.

The supervisor forks it once at start-up, before it has any threads. It imports every
executor module, freezes the heap, then waits on a SOCK_SEQPACKET socket for `Spawn`
requests carrying the worker's pipe ends.

To keep the fork off the call's critical path, *spare* workers are forked ahead of time: each
prepares everything that does not depend on the call and waits. A `Spawn` hands the pipe ends
to the oldest spare, which becomes that call's worker (used once, then it exits), and a new
spare is forked for a later call. Two spares wait, so that calls coming back to back (a turn's
many small reads) each find one ready rather than one still getting ready. The fork point reaps its workers and reports each exit status. When
the supervisor goes away it stops its workers (TERM, which they treat as cancellation, then
KILL) and exits.
"""

import collections
import ctypes
import faulthandler
import gc
import importlib
import os
import resource
import select
import selectors
import signal
import socket
import sys
from collections.abc import Iterator

from scv.core import stopping
from scv.core.messages import Exited, Spawned, SpawnFailed, decode_spawn, encode
from scv.core.oscalls import REAL
from workers import runtime

PR_SET_CHILD_SUBREAPER = 36
MAX_PACKET = 65536
SPARES = 2


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


# Opened once, in the fork point: a spare getting ready (on the next call's path when calls
# come back to back) does not open it again.
_LIBC = _libc()


def _prctl(option: int, value: int) -> None:
    try:
        _LIBC.prctl(option, value, 0, 0, 0)
    except AttributeError:      # no libc handle, or no prctl in it
        pass


class _Spare:
    """A forked worker waiting for its call; `prepare` names the sandbox it made ready."""

    def __init__(self, pid: int, sock: socket.socket, prepare: str):
        self.pid = pid
        self.sock = sock
        self.prepare = prepare


def _fork_spare(close_in_child: list, prepare: str, plan: dict | None) -> _Spare:
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        parent_end.close()
        _run_spare(child_end, close_in_child, prepare, plan)     # never returns
    child_end.close()
    return _Spare(pid, parent_end, prepare)


def _pick(spares: "collections.deque[_Spare]", prepare: str) -> _Spare | None:
    """The oldest spare made ready for this sandbox, else the oldest plain one (a call prepares
    its own sandbox there); never a spare readied for another sandbox (its worker may sit in a
    user namespace an unsandboxed call must not run in)."""
    for wanted in dict.fromkeys((prepare, "")):
        for spare in spares:
            if spare.prepare == wanted:
                spares.remove(spare)
                return spare
    return None


def _run_spare(sock: socket.socket, close_in_child: list, prepare: str, plan: dict | None) -> None:
    """The spare's life: prepare, wait for the call's pipe ends, run the call; never returns."""
    code = 70
    try:
        for item in close_in_child:
            item.close() if hasattr(item, "close") else os.close(item)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        runtime.warm_up()
        if prepare:
            from workers import sandbox_linux      # preloaded with the executors that use it
            sandbox_linux.prepare(prepare, plan)
        try:
            payload, fds, _, _ = socket.recv_fds(sock, MAX_PACKET, 3)
        except OSError:
            payload, fds = b"", []
        sock.close()
        if not payload or len(fds) != 3:
            os._exit(0)       # the fork point went away (or shut down) before a call came
        request = decode_spawn(payload)
        in_fd, out_fd, err_fd = fds
        os.dup2(err_fd, 2)
        os.close(err_fd)
        faulthandler.enable(file=2)     # a crash leaves its traceback in the stderr tail
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (request.memory_bytes, hard))
        if request.kind == "live":
            # Preloaded by a session's supervisor (scv.tools.registry.WORKER_MODULES); a single
            # `scv tool` call never starts one, so its fork point does not load it.
            from workers import live_runtime
            code = live_runtime.serve(in_fd, out_fd)
        else:
            code = runtime.main(in_fd, out_fd)
    except BaseException as exc:     # report, then exit with a status the supervisor shows
        try:
            os.write(2, f"worker start failed: {type(exc).__name__}: {exc}\n".encode())
        except OSError:
            pass
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 70
    os._exit(code)


class _PreloadAbandoned(BaseException):
    """SIGUSR1 during a preload import: the supervisor is closing (Supervisor.close). Not an
    Exception, so a module that guards an optional import with `except Exception` lets it through."""


def serve(sock: socket.socket, preload: list[str], refill_spare: bool = True, gate: int | None = None) -> None:
    """The fork point's loop; returns when the supervisor has gone and the workers are stopped.
    Without `refill_spare` one spare waits for the first call, and a later call forks its
    worker when it comes. With a `gate` (a pipe's read end) nothing is preloaded before the
    supervisor closes the other end (Supervisor.release), and then one module at a time while
    no message waits: a call that comes meanwhile is served at once by a spare without the
    preload (its worker imports what it needs), and the spares are forked again once it is done."""
    # A supervisor forked from a thread that blocks signals (a host that handles them in one
    # thread of its own; a Ray task's process has SIGINT blocked) hands its mask down: with
    # SIGCHLD blocked no worker's exit would wake this loop, and a worker with SIGTERM blocked
    # would not hear its cancellation. Dispositions, not an inherited mask, decide here.
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    importer = _Importer()
    _ForkPoint(sock, _preload(preload, gate, importer), refill_spare, importer).run()


class _Importer:
    """Imports the preload one module at a time. A closing supervisor sends SIGUSR1 so that a long
    import (the web executors load lxml) does not hold its process's exit: the import underway
    is abandoned, and the fork point goes on to see the socket's EOF.

    Where the handler's exception lands in code that cannot raise (a weakref callback, such as the
    one importlib sets on each module lock, or a `__del__`), Python drops it: the import then runs
    to its end, and `load` still reports it abandoned, without the "Exception ignored" report that
    would otherwise reach the user's stderr (tests/test_supervisor.py)."""

    def __init__(self):
        self._busy = False
        self._abandoned = False
        signal.signal(signal.SIGUSR1, self._on_usr1)
        sys.unraisablehook = _unless_abandoning

    def _on_usr1(self, signum, frame) -> None:
        if self._busy:
            self._busy = False          # raised once: never again inside `load`'s except clause
            self._abandoned = True
            raise _PreloadAbandoned()

    def load(self, name: str) -> bool:
        """False: abandoned, the supervisor is closing."""
        try:
            self._busy = True
            importlib.import_module(name)
            self._busy = False
        except _PreloadAbandoned:
            return False
        return not self._abandoned


def _unless_abandoning(unraisable) -> None:
    if not isinstance(unraisable.exc_value, _PreloadAbandoned):
        sys.__unraisablehook__(unraisable)


def _preload(preload: list[str], gate: int | None, importer: _Importer) -> "collections.deque[str]":
    """Imports the whole preload now, or with a gate waits for the release and imports none;
    returns the modules left to import."""
    pending = collections.deque(preload)
    if gate is None:
        while pending:
            if not importer.load(pending.popleft()):
                pending.clear()
                return pending
        gc.freeze()       # keep the preloaded heap shared with the workers instead of copied
    else:
        while os.read(gate, 1):     # EOF: released, or the supervisor's process is gone
            pass
        os.close(gate)
    return pending


def _drain(wake_r: int) -> None:
    try:
        os.read(wake_r, 4096)
    except BlockingIOError:
        pass


class _Workers:
    """The fork point's children: the spares waiting for a call and the workers running one."""

    def __init__(self, inherited: list, wanted: int):
        self.inherited = inherited      # the fork point's own ends, which no spare keeps
        self.wanted = wanted
        self.children: dict[int, str | None] = {}      # pid -> call id (None: a spare)
        self.spares: collections.deque[_Spare] = collections.deque()      # oldest (readiest) first

    def _new_spare(self, prepare: str = "", plan: dict | None = None) -> _Spare | None:
        try:
            # The other spares' sockets too: each spare must see its own socket's EOF.
            spare = _fork_spare(self.inherited + [other.sock for other in self.spares], prepare, plan)
        except OSError:
            return None
        self.children[spare.pid] = None
        return spare

    def fill(self, prepare: str = "", plan: dict | None = None) -> None:
        """Spares up to the number wanted; the next one readied like the call just handed over
        (calls come in runs of the same kind: a session's sandboxed bash calls)."""
        while len(self.spares) < self.wanted and (spare := self._new_spare(prepare, plan)) is not None:
            self.spares.append(spare)

    def drop_spares(self) -> None:
        """Closes every spare's socket: each exits on its EOF and is reaped like any child."""
        for spare in self.spares:
            spare.sock.close()
        self.spares.clear()

    def hand_over(self, payload: bytes, fds: list[int], call_id: str, prepare: str) -> int | str:
        """Gives the call to the spare that fits it (`_pick`), else to a worker forked for it;
        returns its pid or an error."""
        forked = False
        while True:
            current = _pick(self.spares, prepare)
            if current is None:
                if forked:
                    return "no worker could take the call"
                if self.spares:
                    # Readied for another sandbox: it goes (EOF: it exits), so the refill after
                    # this call forks one of the kind now asked for.
                    self.spares.popleft().sock.close()
                forked, current = True, self._new_spare()
                if current is None:
                    return "fork failed"
            try:
                socket.send_fds(current.sock, [payload], fds)
            except OSError:
                current.sock.close()      # that spare died since the last reap; try the next
                continue
            current.sock.close()
            self.children[current.pid] = call_id
            return current.pid

    def reap(self) -> Iterator[Exited]:
        """Collects every exited child, yielding the exit of each call's worker as it is reaped."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            call_id = self.children.pop(pid, None)
            for spare in [spare for spare in self.spares if spare.pid == pid]:
                # A spare killed while it waited (the OOM killer, a stray signal): never hand it a call.
                self.spares.remove(spare)
                spare.sock.close()
            if call_id is not None:
                yield Exited(call_id=call_id, pid=pid, status=status)


class _ForkPoint:
    """The loop: a call's request, a child's exit (SIGCHLD's byte in the wake-up pipe) and, while
    the gated preload lasts, the next module to import when neither waits."""

    def __init__(self, sock: socket.socket, pending: "collections.deque[str]", refill_spare: bool,
                 importer: _Importer):
        self.sock = sock
        self.importer = importer
        self.pending = pending
        self.refill_spare = refill_spare
        self.wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.sel = selectors.DefaultSelector()
        self.sel.register(sock, selectors.EVENT_READ)
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.workers = _Workers([sock, self.wake_r, wake_w, self.sel], SPARES if refill_spare else 1)

    def run(self) -> None:
        self.workers.fill()
        while True:
            # Idle, it sleeps until a request or a child's exit: SIGCHLD (never blocked here, see
            # `serve`) writes its byte to the wake-up pipe, so no timer is needed to reap.
            ready = self.sel.select(0 if self.pending else None)
            if not ready and self.pending:
                self._preload_next()
                continue
            for key, _ in ready:
                if key.fd == self.wake_r:
                    self._on_child_exit()
                elif not self._on_request():
                    self._shutdown()
                    return
            self._reap()

    def _reap(self) -> None:
        for exited in self.workers.reap():
            try:
                self.sock.send(encode(exited))
            except OSError:
                pass

    def _on_child_exit(self) -> None:
        _drain(self.wake_r)
        self._reap()
        if self.refill_spare:
            self.workers.fill()      # in place of a spare that died waiting

    def _on_request(self) -> bool:
        """Serves one Spawn request; False when the supervisor has gone."""
        try:
            payload, fds, _, _ = socket.recv_fds(self.sock, MAX_PACKET, 3)
        except OSError:
            payload, fds = b"", []
        if not payload:
            return False
        request = decode_spawn(payload)
        outcome = self.workers.hand_over(payload, fds, request.call_id, request.prepare)
        for fd in fds:
            os.close(fd)
        if isinstance(outcome, int):
            self.sock.send(encode(Spawned(call_id=request.call_id, pid=outcome)))
        else:
            self.sock.send(encode(SpawnFailed(call_id=request.call_id, error=outcome)))
        if self.refill_spare:
            self.workers.fill(request.prepare, request.plan)      # ready for a later call, off this call's path
        return True

    def _preload_next(self) -> None:
        if not self.importer.load(self.pending.popleft()):
            self.pending.clear()            # the socket's EOF comes next: no spares are forked again
            return
        if not self.pending:
            gc.freeze()
            # The spares forked before the preload ended lack it: fresh ones take their place
            # (the old ones exit on their socket's EOF and are reaped).
            self.workers.drop_spares()
            self.workers.fill()

    def _until_a_child_exits(self, seconds: float) -> None:
        # SIGCHLD writes to the wake-up pipe: the shutdown ends when the last worker does.
        if select.select([self.wake_r], [], [], seconds)[0]:
            _drain(self.wake_r)

    def _shutdown(self) -> None:
        self.workers.drop_spares()
        # SERVING -> STOPPING: workers take TERM as cancellation and stop their own processes first;
        # whatever has not exited within a cancelled call's bound gets KILL.
        stopping.stop(REAL, group=None, find=lambda: list(self.workers.children), immediate=False,
                      grace=stopping.CANCEL_BOUND_SECONDS, reap=self._reap, pause=self._until_a_child_exits)
