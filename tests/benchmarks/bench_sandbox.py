"""Issue 14's benchmarks: what the OS sandbox adds to a call, against the same call unsandboxed
in the same process, interleaved: `bash true`, and a build-like burst of 2,000 small files
written in the workspace. Also what each mechanism costs on its own (network namespace, the
worker's user namespace, Landlock-only hiding) and the one-time kernel probe."""

import os
import tempfile
import time
from pathlib import Path

import msgspec

from scv.config.load import Config, ToolsConfig
from scv.sandbox import kernel
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.supervision.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules
from tests.benchmarks.common import interleaved, line, timed

WRITES = ("rm -rf target && mkdir -p target/{a..t} && for d in target/*; do for i in $(seq 100); do "
          "printf 'pub fn f%d() {}\\n' $i > $d/m$i.rs; done; done")


def _runner(sup: Supervisor, ws: Path, **tools) -> ToolRunner:
    ctx = ToolContext(workspace=ws, config=Config(tools=ToolsConfig(**tools)))
    return ToolRunner(sup, build_registry(ctx), ctx, approve_all)


def _call(runner: ToolRunner, command: str):
    def run():
        result = runner.call("bash", {"command": command})
        assert result.ok, result.value
    return run


def _ratio(label: str, sandboxed, plain, rounds: int, target: str) -> None:
    for _ in range(3):
        sandboxed()
        plain()
    ours, bare = interleaved(sandboxed, plain, rounds)
    line(f"{label}: sandboxed (median)", f"{ours * 1e3:.2f} ms")
    line(f"{label}: unsandboxed (median)", f"{bare * 1e3:.2f} ms")
    line(f"{label}: ratio (target <= {target})", f"{ours / bare:.3f}")


def main() -> None:
    started = time.perf_counter()
    support = kernel.support()
    line("kernel probe, once per process", f"{(time.perf_counter() - started) * 1e3:.0f} ms")
    line("kernel", f"Landlock ABI {support.landlock_abi}, CAP_SYS_ADMIN {support.cap_sys_admin}, "
                   f"mount ns {support.mount_namespace}, network ns {support.network_namespace}")
    if support.landlock_abi < 1:
        line("skipped", support.landlock_error or "no Landlock")
        return
    saved_home = os.environ.get("HOME")
    with tempfile.TemporaryDirectory() as tmp:
        # A login shell reads the user's profile; a clean home keeps a developer's (pyenv's
        # rehash costs ~250 ms here) out of both sides.
        os.environ["HOME"] = tmp
        ws = Path(tmp) / "ws"
        ws.mkdir()
        try:
            with Supervisor(preload=executor_modules()) as sup:
                plain = _runner(sup, ws)
                boxed = _runner(sup, ws, sandbox="workspace-write")
                _ratio("bash `true`, no network", _call(boxed, "true"), _call(plain, "true"), 200, "1.15")
                _ratio("2,000 small file writes", _call(boxed, WRITES), _call(plain, WRITES), 15, "1.10")
                networked = _runner(sup, ws, sandbox="workspace-write", sandbox_network=True)
                _ratio("bash `true`, network allowed (no network namespace)", _call(networked, "true"),
                       _call(plain, "true"), 200, "-")
                real_support = kernel.support
                try:
                    if support.cap_sys_admin:
                        as_unprivileged = msgspec.structs.replace(support, cap_sys_admin=False, user_namespace=True)
                        kernel.support = lambda: as_unprivileged
                        _ratio("bash `true`, worker in its own user namespace", _call(boxed, "true"),
                               _call(plain, "true"), 200, "-")
                    rules_only = msgspec.structs.replace(support, mount_namespace=False)
                    kernel.support = lambda: rules_only
                    fallback = _runner(sup, ws, sandbox="workspace-write", sandbox_fallback="landlock-only")
                    _ratio("bash `true`, landlock-only tier (secrets hidden by Landlock rules)", _call(fallback, "true"),
                           _call(plain, "true"), 200, "-")
                finally:
                    kernel.support = real_support
                one = _call(boxed, "true")
                line("for scale: one sandboxed `bash true` (single run)", f"{timed(one) * 1e3:.2f} ms")
        finally:
            if saved_home is not None:
                os.environ["HOME"] = saved_home
