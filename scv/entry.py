"""The process entry of every `scv`: bin/scv, `python -m scv` (scv/__main__.py) and the installed
command. A plain `scv exec` or `scv tool` line runs without click (scv/commands/plain.py); any
other line is click's (scv/cli.py)."""

import gc
import sys


def main() -> None:
    # Start-up creates tens of thousands of objects and no garbage worth a collection; the
    # collector comes back on once the command to run is loaded (freeze_start_up).
    gc.disable()
    from scv.commands.plain import run_plain
    run_plain(sys.argv[1:])
    from scv.cli import main as click_main
    click_main(prog_name="scv")
