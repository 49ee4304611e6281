"""What a command's process does alike on either reading of its command line (click's in
scv/cli.py, or the plain one in scv/entry.py): the collector frozen once the command is loaded,
its lines to stdout or stderr, SCV's errors as one sentence and their exit status, and a quick
exit for a command whose work is over."""

import gc
import os
import sys
from typing import NoReturn

from scv.core.errors import ScvError

# Commands whose work is over (workers stopped, output written) when they return.
QUICK_EXIT = {"tool", "tools"}


def say(message: str, err: bool = False) -> None:
    """One line, written as click.echo writes it. click.echo itself is used (and loaded) only where
    it would change the text: ANSI codes to strip off a terminal, or a stream not in UTF-8."""
    stream = sys.stderr if err else sys.stdout
    if "\x1b" in message or (stream.encoding or "").replace("-", "").lower() != "utf8":
        import click
        click.echo(message, err=err)
        return
    stream.write(message + "\n")
    stream.flush()


def exit_on_error(err: ScvError) -> NoReturn:
    """A command's own error: its sentence on stderr, its exit status."""
    say(f"scv: {err}", err=True)
    sys.exit(err.exit_code)


def quick_exit(code: object) -> NoReturn:
    """Exit with `code` (as SystemExit reads it) without the interpreter's teardown of every
    module, which costs a short command a good part of its time: only for a command that has
    nothing left to do once its output is written."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else int(code is not None))


def freeze_start_up() -> None:
    """The collector is off during start-up (scv/entry.py); once the command is loaded, what
    start-up made lives as long as the process: frozen, no collection walks it (nor writes to
    pages a fork shares)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
