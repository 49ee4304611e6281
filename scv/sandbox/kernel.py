"""What this kernel lets the sandbox do, asked once per process of the mechanism itself: a fresh
`python -m workers.sandbox_linux --probe` tries each step (Landlock's ABI, a user namespace when
there is no CAP_SYS_ADMIN, a mount namespace with a tmpfs, a network namespace) and prints what
worked. A throwaway process, because the steps cannot be undone and a process with threads could
not try the user namespace at all."""

import functools
import os
import sys
from pathlib import Path

import msgspec

from scv.core.sandbox.policy import KernelSupport

PROBE_TIMEOUT_SECONDS = 30
_ROOT = str(Path(__file__).resolve().parents[2])


@functools.cache
def support() -> KernelSupport:
    import subprocess       # late: most commands never probe
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        done = subprocess.run([sys.executable, "-m", "workers.sandbox_linux", "--probe"], env=env, cwd="/",
                              capture_output=True, timeout=PROBE_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return KernelSupport(landlock_error=f"the kernel probe could not run ({err})")
    try:
        return msgspec.json.decode(done.stdout.strip().splitlines()[-1], type=KernelSupport)
    except (IndexError, msgspec.DecodeError, msgspec.ValidationError):
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return KernelSupport(landlock_error=f"the kernel probe failed ({tail[0]})")
