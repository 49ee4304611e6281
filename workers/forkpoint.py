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

from scv.core import stopping
from scv.core.messages import Exited, Spawned, SpawnFailed, decode_spawn, encode
from scv.core.oscalls import REAL
from workers import runtime

PR_SET_CHILD_SUBREAPER = 36
MAX_PACKET = 65536
SPARES = 2
# SIGCHLD's byte in the wake-up pipe reaps a finished worker at once. Once in about a dozen suite
# runs a worker stayed a zombie of an idle fork point for over 10 s, and no path that loses that
# wake-up has been found (tests/test_supervisor.py's leak test names its state if it lasts): an
# idle fork point also reaps this often, so such a zombie cannot outlive the interval.
REAP_AT_LEAST_EVERY = 2.0


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
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
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


def serve(sock: socket.socket, preload: list[str], refill_spare: bool = True, gate: int | None = None) -> None:
    """The fork point's loop; returns when the supervisor has gone and the workers are stopped.
    Without `refill_spare` one spare waits for the first call, and a later call forks its
    worker when it comes. With a `gate` (a pipe's read end) nothing is preloaded before the
    supervisor closes the other end (Supervisor.release), and then one module at a time while
    no message waits: a call that comes meanwhile is served at once by a spare without the
    preload (its worker imports what it needs), and the spares are forked again once it is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    pending = collections.deque(preload)
    if gate is None:
        while pending:
            importlib.import_module(pending.popleft())
        gc.freeze()       # keep the preloaded heap shared with the workers instead of copied
    else:
        while os.read(gate, 1):     # EOF: released, or the supervisor's process is gone
            pass
        os.close(gate)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, str | None] = {}      # pid -> call id (None: the spare)
    sel = selectors.DefaultSelector()
    inherited = [sock, wake_r, wake_w, sel]
    sel.register(sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)

    spares: collections.deque[_Spare] = collections.deque()      # oldest (readiest) first
    wanted = SPARES if refill_spare else 1

    def new_spare(prepare: str = "", plan: dict | None = None) -> _Spare | None:
        try:
            # The other spares' sockets too: each spare must see its own socket's EOF.
            spare = _fork_spare(inherited + [other.sock for other in spares], prepare, plan)
        except OSError:
            return None
        children[spare.pid] = None
        return spare

    def fill(prepare: str = "", plan: dict | None = None) -> None:
        """Spares up to the number wanted; the next one readied like the call just handed over
        (calls come in runs of the same kind: a session's sandboxed bash calls)."""
        while len(spares) < wanted and (spare := new_spare(prepare, plan)) is not None:
            spares.append(spare)

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            call_id = children.pop(pid, None)
            dead = [spare for spare in spares if spare.pid == pid]
            for spare in dead:
                # A spare killed while it waited (the OOM killer, a stray signal): never hand it a call.
                spares.remove(spare)
                spare.sock.close()
            if call_id is not None:
                try:
                    sock.send(encode(Exited(call_id=call_id, pid=pid, status=status)))
                except OSError:
                    pass

    def hand_over(payload: bytes, fds: list[int], call_id: str, prepare: str) -> int | str:
        """Gives the call to the spare that fits it (`_pick`), else to a worker forked for it;
        returns its pid or an error."""
        forked = False
        while True:
            current = _pick(spares, prepare)
            if current is None:
                if forked:
                    return "no worker could take the call"
                if spares:
                    # Readied for another sandbox: it goes (EOF: it exits), so the refill after
                    # this call forks one of the kind now asked for.
                    spares.popleft().sock.close()
                forked, current = True, new_spare()
                if current is None:
                    return "fork failed"
            try:
                socket.send_fds(current.sock, [payload], fds)
            except OSError:
                current.sock.close()      # that spare died since the last reap; try the next
                continue
            current.sock.close()
            children[current.pid] = call_id
            return current.pid

    def preload_next() -> None:
        importlib.import_module(pending.popleft())
        if not pending:
            gc.freeze()
            # The spares forked before the preload ended lack it: fresh ones take their place
            # (the old ones exit on their socket's EOF and are reaped).
            for spare in spares:
                spare.sock.close()
            spares.clear()
            fill()

    fill()
    while True:
        ready = sel.select(0 if pending else REAP_AT_LEAST_EVERY)
        if not ready and pending:
            preload_next()
            continue
        for key, _ in ready:
            if key.fd == wake_r:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                reap()
                if refill_spare:
                    fill()      # in place of a spare that died waiting
                continue
            try:
                payload, fds, _, _ = socket.recv_fds(sock, MAX_PACKET, 3)
            except OSError:
                payload, fds = b"", []
            if not payload:
                for spare in spares:
                    spare.sock.close()
                _shutdown(children, reap, wake_r)
                return
            request = decode_spawn(payload)
            outcome = hand_over(payload, fds, request.call_id, request.prepare)
            for fd in fds:
                os.close(fd)
            if isinstance(outcome, int):
                sock.send(encode(Spawned(call_id=request.call_id, pid=outcome)))
            else:
                sock.send(encode(SpawnFailed(call_id=request.call_id, error=outcome)))
            if refill_spare:
                fill(request.prepare, request.plan)      # ready for a later call, off this call's path
        reap()


def _shutdown(children: dict[int, str | None], reap, wake_r: int) -> None:
    def until_a_child_exits(seconds: float) -> None:
        # SIGCHLD writes to the wake-up pipe: the shutdown ends when the last worker does.
        if select.select([wake_r], [], [], seconds)[0]:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass

    # SERVING -> STOPPING: workers take TERM as cancellation and stop their own processes first;
    # whatever has not exited within a cancelled call's bound gets KILL.
    stopping.stop(REAL, group=None, find=lambda: list(children), immediate=False,
                  grace=stopping.CANCEL_BOUND_SECONDS, reap=reap, pause=until_a_child_exits)
