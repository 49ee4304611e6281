"""One sandboxed run for an executor (bash, agent): the call's private temporary folder
(exported as TMPDIR, removed afterwards), its policy and Landlock rules, the launcher that
starts the command inside them, and the result's `sandbox` field."""

import os
import shutil
import tempfile
from typing import Any

import msgspec

from scv.sandbox.fsview import REAL_FS
from scv.sandbox.policy import SandboxRequest, build_policy, hidden_inside_writable, looks_denied
from scv.sandbox.rules import landlock_rules
from workers.sandbox_linux import Launcher, SandboxError, ancestors


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
    """`with SandboxedRun(request, workspace) as run:` where request is the call's `sandbox`
    option (None: no sandbox, and `run.launcher` is None). Raises SandboxError if the sandbox
    cannot be prepared; the command must then not run."""

    def __init__(self, request: dict[str, Any] | None, workspace: str):
        self.request = msgspec.convert(request, SandboxRequest) if request is not None else None
        self.workspace = workspace
        self.tmpdir: str | None = None
        self.launcher: Launcher | None = None

    def __enter__(self) -> "SandboxedRun":
        request = self.request
        if request is None:
            return self
        self.tmpdir = tempfile.mkdtemp(prefix="scv-sandbox-")
        try:
            # With a mount namespace, the /proc entries of SCV and whatever started it are hidden
            # too: their environments hold what the command's own was cleaned of.
            processes = tuple(f"/proc/{pid}" for pid in [os.getpid(), *ancestors()]) \
                if request.hide_with == "mount" else ()
            policy = build_policy(request, self.workspace, self.tmpdir, REAL_FS, also_hidden=processes)
            clash = hidden_inside_writable(policy) if request.hide_with == "rules" else []
            if clash:
                raise SandboxError(f"{clash[0][1]} cannot be kept unreadable inside the writable folder {clash[0][0]} "
                                   "without a mount namespace")
            rules = landlock_rules(policy.writable, policy.devices, policy.hidden, request.landlock_abi,
                                   request.hide_with, REAL_FS)
            self.launcher = Launcher(request, policy, rules)
        except BaseException:
            _remove(self.tmpdir)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.launcher is not None:
            self.launcher.close()
        if self.tmpdir is not None:
            _remove(self.tmpdir)

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        if self.tmpdir is not None:
            env["TMPDIR"] = self.tmpdir
        return env

    def field(self, output: str) -> dict[str, Any] | None:
        """The result's `sandbox` entry: the mode, the network setting, and `denied` when the
        output reads like a sandbox denial (a hint, not a guarantee)."""
        request = self.request
        if request is None:
            return None
        value: dict[str, Any] = {"mode": request.mode, "network": request.network}
        if looks_denied(output, request.network):
            value["denied"] = True
        return value


__all__ = ["SandboxedRun", "SandboxError"]
