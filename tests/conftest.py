"""Shared fixtures: a private SCV_HOME, a workspace, a real supervisor, and `scv` as a process;
and a time limit on every test, so a hang fails that test with its stacks instead of stalling
the run."""

import faulthandler
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from scv.agents.session import open_agent_session
from scv.config.load import Config, load_config
from scv.config.load import scv_home as scv_home_path
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.supervision.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules
from scv.tools.services import Services

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis's per-example deadline is a timing assertion: on a loaded 2-core machine a 6 ms
# example took 336 ms once and failed the suite. Properties here check results, never speed
# (bin/bench measures that), so no example has a deadline and a slow data draw is no error.
settings.register_profile("scv", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("scv")

# --- a time limit per test, from the standard library ----------------------------------------
# Generous: a bound for a loaded machine, never a measurement. `@pytest.mark.time_limit(seconds)`
# (registered in setup.cfg) sets another for one test. Setup and call share the limit; teardown
# gets what is left or TEARDOWN_GRACE_SECONDS (at most the limit itself), whichever is more, so
# the fixtures of a test that ran out of time still stop what it started.
DEFAULT_TIME_LIMIT_SECONDS = 240.0
TEARDOWN_GRACE_SECONDS = 30.0
_DEADLINE = pytest.StashKey[float]()
_LIMIT = pytest.StashKey[float]()


def _thread_stacks(frames: int = 16) -> str:
    """The innermost `frames` of every thread's stack (the test's own, not pytest's machinery)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "\n".join(f"thread {names.get(ident, ident)}:\n" + "".join(traceback.format_stack(frame, limit=frames))
                     for ident, frame in sys._current_frames().items())


def _limit_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("time_limit")
    if marker is None:
        return DEFAULT_TIME_LIMIT_SECONDS
    if len(marker.args) != 1 or isinstance(marker.args[0], bool) or not isinstance(marker.args[0], (int, float)) \
            or marker.args[0] <= 0:
        raise pytest.UsageError(f"{item.nodeid}: time_limit takes one positive number of seconds, such as "
                                "@pytest.mark.time_limit(600)")
    return float(marker.args[0])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    limit = _limit_of(item)
    item.stash[_LIMIT] = limit
    item.stash[_DEADLINE] = time.monotonic() + limit


def _phase_under_alarm(item: pytest.Item, seconds: float):
    """Runs one phase of the test with SIGALRM due in `seconds`. When it comes, faulthandler's C
    handler writes every thread's stack to stderr at once (so they show even if the main thread
    never runs Python again), then the Python handler fails the phase with the same stacks (a
    BaseException, so the code under test cannot swallow it).

    Not faulthandler.dump_traceback_later: its watchdog thread leaves a thread stack and a malloc
    arena in this process (VmSize 12 MiB -> 86 MiB once armed and cancelled), which the fork
    point, forked from here, and every worker inherit, so the tests of a 128 MiB worker ceiling
    fail. The Supervisor wants a process without threads; the alarm needs none."""
    limit = item.stash[_LIMIT]

    def over_time(signum, frame):
        pytest.fail(f"{item.nodeid} ran past its time limit of {limit:g} s (@pytest.mark.time_limit(seconds) "
                    f"sets another); the stacks of its threads:\n{_thread_stacks()}")
    previous = signal.signal(signal.SIGALRM, over_time)
    faulthandler.register(signal.SIGALRM, all_threads=True, chain=True)    # after: it chains to over_time
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.unregister(signal.SIGALRM)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _phase_under_alarm(item, item.stash[_DEADLINE] - time.monotonic()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _phase_under_alarm(item, item.stash[_DEADLINE] - time.monotonic()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    remaining = item.stash[_DEADLINE] - time.monotonic()
    grace = min(item.stash[_LIMIT], TEARDOWN_GRACE_SECONDS)
    return (yield from _phase_under_alarm(item, max(remaining, grace)))



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


@pytest.fixture(scope="session", autouse=True)
def supervisor():
    # Forked before the first test, as SCV's commands fork theirs before any thread: a process
    # keeps the address space its ended threads took (glibc keeps their stacks and malloc arenas,
    # 64 MiB each), every process forked later inherits it, and a worker's tools.worker_memory_mb
    # limit counts it. Forked after a test ran threads here, a tight worker could not start one.
    sup = Supervisor(preload=executor_modules())
    yield sup
    sup.close()


@pytest.fixture
def make_runner(supervisor, workspace):
    """make_runner(config=None, approver=approve_all, workspace=None) -> ToolRunner"""
    opened = []

    def make(config: Config | None = None, approver=approve_all, root: Path | None = None, budget=None) -> ToolRunner:
        root = root or workspace
        ctx = ToolContext(workspace=root, config=config or load_config(root), budget=budget)
        agents = open_agent_session(ctx.config, scv_home_path())
        opened.append(agents)
        return ToolRunner(supervisor, build_registry(ctx, Services(agents=agents)), ctx, approver)
    yield make
    for agents in opened:
        agents.close()


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


@pytest.fixture
def clients():
    """clients(*args, **kw) -> a `scv server --stdio` client (tests/stdio_client.py), killed after the test."""
    from tests.stdio_client import StdioClient
    started = []

    def make(*args: str, **kw):
        client = StdioClient(*args, **kw)
        started.append(client)
        return client
    yield make
    for client in started:
        client.kill()
