"""The process entry of every `scv`: bin/scv, `python -m scv` (scv/__main__.py) and the installed
command.

A plain `scv exec`, `scv tool` or `scv tools` line (what scripts and CI write) runs without
loading click, which costs a short command about 20 ms: scv/plain_argv.py reads it, and leaves
any line it does not read exactly as click does to click (scv/cli.py), help and errors included.
The command ends as under click: SCV's errors as one sentence and their exit status, an
interruption before the command's own handlers as `Aborted!` and status 1, a closed stdout as
status 1, and a QUICK_EXIT command without the interpreter's teardown."""

import errno
import gc
import importlib
import os
import sys

# command: (module, function); scv/cli.py declares the same commands for click.
PLAIN = {
    "exec": ("scv.commands.exec_run", "run_exec"),
    "tool": ("scv.commands.tool_run", "run_tool"),
    "tools": ("scv.commands.tools_run", "run_tools"),
}


def main() -> None:
    # Start-up creates tens of thousands of objects and no garbage worth a collection; the
    # collector comes back on once the command to run is loaded (freeze_start_up).
    gc.disable()
    import_msgspec_alone()
    run_plain(sys.argv[1:])
    from scv.cli import main as click_main
    click_main(prog_name="scv")


def import_msgspec_alone() -> None:
    """Imports msgspec without typing_extensions, which every SCV environment has (jsonschema's
    `referencing` requires it; pydantic, OpenTelemetry and the MCP SDK too): msgspec then takes
    `get_type_hints`, `Required` and `NotRequired` from `typing`, the same for SCV's Structs (which
    use `typing` alone), and the command skips typing_extensions' import of inspect, ast, dis and
    tokenize (about 0.7x a bare interpreter here). Anything imported later, the OpenTelemetry
    extra, still gets typing_extensions."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None        # `import typing_extensions` fails while set
    try:
        importlib.import_module("msgspec")
    finally:
        del sys.modules["typing_extensions"]


def run_plain(argv: list[str]) -> None:
    """Run the command in `argv` and exit; return at once if it is not read here (click will)."""
    if not argv or argv[0] not in PLAIN:
        return
    module_name, function = PLAIN[argv[0]]
    # Loaded here, not above: any other line (`scv --help`) loads none of it.
    from scv.lifecycle import QUICK_EXIT, exit_on_error, freeze_start_up, quick_exit, say
    from scv.core.errors import ScvError
    from scv.plain_argv import read
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


def _quiet_streams() -> None:
    """Nothing more can be said on a closed pipe: the flush at exit must not raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(devnull)
