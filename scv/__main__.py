"""`python -m scv` (and bin/scv): the process entry."""

import gc

# Start-up creates tens of thousands of objects and no garbage worth a collection; the
# collector comes back on once the command to run is loaded (ScvGroup.resolve_command).
gc.disable()

from scv.cli import main  # noqa: E402

main(prog_name="scv")
