"""Executors that misbehave on purpose, for the supervisor's crash-isolation tests.

They are imported by name inside the worker ("tests.crashy:segfault"), never registered as tools.
"""

import ctypes
import os
import time

from scv.core.frames import HEADER


def segfault(args, ctx):
    ctypes.string_at(0)


def abort(args, ctx):
    os.abort()


def exhaust_memory(args, ctx):
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def garbage(args, ctx):
    os.write(ctx.out_fd, HEADER.pack(12) + b"\xc1" * 12)
    time.sleep(30)


def torn(args, ctx):
    os.write(ctx.out_fd, HEADER.pack(100) + b"\x81")
    os._exit(0)


def silent_exit(args, ctx):
    os.write(2, b"about to vanish\n")
    os._exit(3)


def hang(args, ctx):
    while True:
        time.sleep(1)


def echo(args, ctx):
    return {"echo": args}


def progress(args, ctx):
    for i in range(args.get("lines", 3)):
        ctx.progress(f"step {i}")
    return {"done": True}


def _until_cancelled(ctx) -> None:
    import select
    while not ctx.token.check():
        select.select(ctx.token.fds(), [], [])


def wait_for_cancel(args, ctx):
    """Says it is waiting, then honours the call's cancellation like a well-behaved executor."""
    ctx.progress("waiting")
    _until_cancelled(ctx)
    return {"cancelled": True}


def pid_until_cancelled(args, ctx):
    """Says its pid, then waits for the call's cancellation and returns."""
    ctx.progress(str(os.getpid()))
    _until_cancelled(ctx)
    return {"pid": os.getpid()}


def ask(args, ctx):
    """Relays one approval request and reports the answer."""
    return {"approved": ctx.ask("bash", "process", args.get("summary", "run something"))}


def ignore_cancel(args, ctx):
    """Says it is waiting, then ignores cancellation (SIGTERM included) for good."""
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ctx.progress("waiting")
    while True:
        time.sleep(1)
