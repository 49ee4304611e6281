"""Shared fixtures: a private SCV_HOME, a workspace, a real supervisor, and `scv` as a process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scv.approval import approve_all
from scv.calls import ToolRunner
from scv.config import Config, load_config
from scv.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def quiet_user_home(tmp_path_factory):
    """Tests never read the developer's own shell profile: `bash -lc` would source it, making
    runs depend on this machine (and a profile that takes locks, such as pyenv's rehash, breaks
    when a test kills a shell midway). Set before the session's supervisor forks its fork point,
    whose environment every worker inherits."""
    home = tmp_path_factory.mktemp("user-home")
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield home
    if saved is not None:
        os.environ["HOME"] = saved


@pytest.fixture(autouse=True)
def scv_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "scv-home"
    home.mkdir()
    monkeypatch.setenv("SCV_HOME", str(home))
    return home


@pytest.fixture
def user_home(tmp_path, monkeypatch) -> Path:
    """A fake user's home (HOME) and a PATH of the system folders only (see tests/fakes.py)."""
    from tests.fakes import setup_fake_home     # late: tests.fakes imports this module
    return setup_fake_home(tmp_path, monkeypatch)


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


@pytest.fixture(scope="session")
def supervisor():
    sup = Supervisor(preload=executor_modules())
    yield sup
    sup.close()


@pytest.fixture
def make_runner(supervisor, workspace):
    """make_runner(config=None, approver=approve_all, workspace=None) -> ToolRunner"""
    def make(config: Config | None = None, approver=approve_all, root: Path | None = None) -> ToolRunner:
        root = root or workspace
        ctx = ToolContext(workspace=root, config=config or load_config(root))
        return ToolRunner(supervisor, build_registry(ctx), ctx, approver)
    return make


@pytest.fixture
def runner(make_runner) -> ToolRunner:
    return make_runner()


def scv_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def run_scv(*args: str, cwd: Path | None = None, input: str | None = None, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs `python -m scv ARGS` as a real process; stdin is /dev/null unless `input` is given."""
    return subprocess.run([sys.executable, "-m", "scv", *args], cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=timeout, env=env or scv_env(),
                          stdin=None if input is not None else subprocess.DEVNULL)


def result_json(proc: subprocess.CompletedProcess) -> dict:
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, f"no stdout; stderr: {proc.stderr}"
    return json.loads(lines[-1])
