"""One sandboxed run for an executor (bash, agent): the call's private temporary folder
(exported as TMPDIR, removed afterwards), the supervisor's plan finished with what only the
worker knows, the launcher that starts the command inside it, and the result's `sandbox` field."""

import functools
import os
import shutil
import tempfile
from typing import Any

import msgspec

from scv.core.sandbox.policy import SandboxPlan, looks_denied
from workers.sandbox_linux import Launcher, SandboxError, launcher_for


def _make_tmpdir() -> str:
    """A private (0700) folder under the system's temporary folder, named at random."""
    while True:
        path = os.path.join(TEMP_ROOT, f"scv-sandbox-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


def _remove(path: str) -> None:
    """Removes the temporary folder even where the command took its own rights away."""
    def loosen(func, failed, exc_info) -> None:
        try:
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
            func(failed)
        except OSError:
            pass

    shutil.rmtree(path, onerror=loosen)
    shutil.rmtree(path, ignore_errors=True)


class SandboxedRun:
    """`with SandboxedRun(plan) as run:` where plan is the call's `sandbox` option (None: no
    sandbox, and `run.launcher` is None). Raises SandboxError if the sandbox cannot be
    prepared; the command must then not run."""

    def __init__(self, plan: dict[str, Any] | None, after_result: list | None = None):
        self.plan = msgspec.convert(plan, SandboxPlan) if plan is not None else None
        self.after_result = after_result      # where the temporary folder's removal can wait (a one-call worker)
        self.tmpdir: str | None = None
        self.launcher: Launcher | None = None

    def __enter__(self) -> "SandboxedRun":
        plan = self.plan
        if plan is None:
            return self
        self.tmpdir = _make_tmpdir()
        try:
            self.launcher = launcher_for(plan)     # ready in a spare worker, or making its namespaces meanwhile
            self.launcher.arm(plan, self.tmpdir)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.spawned()
        if self.tmpdir is not None:
            if self.after_result is not None:
                self.after_result.append(functools.partial(_remove, self.tmpdir))
            else:
                _remove(self.tmpdir)
            self.tmpdir = None

    def spawned(self) -> None:
        """The command has started (or will not): the launcher's thread and ruleset go, while the
        temporary folder stays until `__exit__` (a live agent's server keeps using it)."""
        if self.launcher is not None:
            self.launcher.close()
            self.launcher = None

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        if self.tmpdir is not None:
            env["TMPDIR"] = self.tmpdir
        return env

    def field(self, output: str) -> dict[str, Any] | None:
        """The result's `sandbox` entry: the mode, the network setting, and `denied` when the
        output reads like a sandbox denial (a hint, not a guarantee)."""
        plan = self.plan
        if plan is None:
            return None
        value: dict[str, Any] = {"mode": plan.mode, "network": plan.network}
        if looks_denied(output, plan.network):
            value["denied"] = True
        return value


# Worked out once in the fork point, before any worker is forked: which temporary folder to use
# (tempfile tries writing in each candidate) and how a plan converts.
TEMP_ROOT = tempfile.gettempdir()
msgspec.convert({"mode": "read-only", "network": False, "hide_with": "mount", "network_with": "none",
                 "user_namespace": False, "landlock_abi": 1, "sockets": "no-unix", "writable": ["/w"],
                 "hidden": ["/x"], "rules": [["/", 1]]}, SandboxPlan)

__all__ = ["SandboxedRun", "SandboxError"]
