"""`scv exec`, `scv tool` and `scv tools` from a plain command line, without loading click (the line is read
by scv/commands/plain_argv.py). They end as under click: SCV's errors as one sentence and their
exit status, an interruption before the command's own handlers as `Aborted!` and status 1, a
closed stdout as status 1; `scv tool` and `scv tools` exit without the interpreter's teardown (scv/cli.py's
QUICK_EXIT)."""

import errno
import gc
import importlib
import os
import sys

from scv.commands.ending import QUICK_EXIT, exit_on_error, quick_exit, say
from scv.commands.plain_argv import read
from scv.core.errors import ScvError

# command: (module, function); scv/cli.py declares the same commands for click.
PLAIN = {
    "exec": ("scv.commands.exec_run", "run_exec"),
    "tool": ("scv.commands.tool_run", "run_tool"),
    "tools": ("scv.commands.tools_run", "run_tools"),
}


def run_plain(argv: list[str]) -> None:
    """Run the command in `argv` and exit; return at once if it is not read here (click will)."""
    if not argv or argv[0] not in PLAIN:
        return
    module_name, function = PLAIN[argv[0]]
    module = importlib.import_module(module_name)
    values = read(argv[1:], module.SIGNATURE)
    if values is None:
        return
    freeze_start_up()
    try:
        try:
            getattr(module, function)(**values)
            sys.exit(0)         # a command that returns has succeeded, as under click
        except ScvError as err:
            exit_on_error(err)
        except (KeyboardInterrupt, EOFError):
            say("\nAborted!", err=True)
            sys.exit(1)
        except OSError as err:
            if err.errno != errno.EPIPE:
                raise
            _quiet_streams()
            sys.exit(1)
    except SystemExit as done:
        if argv[0] in QUICK_EXIT:
            quick_exit(done.code)
        raise


def freeze_start_up() -> None:
    """The collector is off during start-up (scv/__main__.py); once the command is loaded, what
    start-up made lives as long as the process: frozen, no collection walks it (nor writes to
    pages a fork shares)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _quiet_streams() -> None:
    """Nothing more can be said on a closed pipe: the flush at exit must not raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(devnull)
