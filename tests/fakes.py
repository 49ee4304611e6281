"""Helpers many tests share, in one place: the deadline loops (`wait_for`, `settle`), the JSON
lines a run prints (`events`), script-provider files (`write_script`), a fake user home, and the
long-running bash processes that cancellation tests start, find by a unique sleep time, and
check are gone. Nothing here sleeps to synchronise: every wait is a deadline loop on a condition."""

import json
import random
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import psutil

from tests.conftest import scv_env

POLL_SECONDS = 0.05


def _poll(condition: Callable[[], Any], seconds: float, interval: float) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_for(condition: Callable[[], Any], timeout: float = 20.0, interval: float = POLL_SECONDS,
             what: str | None = None) -> Any:
    """Polls `condition` until it returns something true and returns that; fails the test when
    `timeout` seconds pass first (a bound for a loaded machine, never a measurement)."""
    value = _poll(condition, timeout, interval)
    if not value:
        raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
    return value


def settle(condition: Callable[[], Any], seconds: float = 10.0, interval: float = POLL_SECONDS) -> bool:
    """Gives `condition` up to `seconds` to hold and says whether it does; the caller asserts what
    it needs (for leak checks that compare counts once things have calmed down)."""
    return bool(_poll(condition, seconds, interval))


def events(output: str | subprocess.CompletedProcess) -> list[dict]:
    """The JSON objects of newline-delimited output (a process's stdout or its text)."""
    text = output if isinstance(output, str) else output.stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_script(path: Path, *turns: dict) -> Path:
    """A script for `scv exec --script`: one model turn a line (after a comment, which it skips)."""
    path.write_text("# a test script\n\n" + "\n".join(json.dumps(t) for t in turns) + "\n")
    return path


def setup_fake_home(tmp_path: Path, monkeypatch, path: tuple[Path, ...] = ()) -> Path:
    """A user home of the test's own (`tmp_path/user`) and a PATH of the system folders only (plus
    `path`), so no agent CLI or profile of this machine is found."""
    user_home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("PATH", ":".join([*(str(p) for p in path), "/usr/bin", "/bin"]))
    return user_home


# --- long-running processes, found by a sleep time no other process uses -----------------------

def unique_marker() -> str:
    """A sleep time no other process on the machine is likely to use."""
    return f"{random.randint(300, 999)}.{random.randint(100000, 999999)}"


def sleepers(mark: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.info["cmdline"] and proc.info["cmdline"][-1] == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue        # it ended while we looked
    return found


def sleepers_command(mark: str) -> str:
    """A bash command with three sleepers: two in its group, one that left it with setsid."""
    return f"sleep {mark} & setsid sleep {mark} & sleep {mark}; wait"


def long_script(tmp_path: Path, mark: str) -> Path:
    return write_script(tmp_path / "long.jsonl",
                        {"calls": [{"id": "b", "tool": "bash", "args": {"command": sleepers_command(mark)}}]},
                        {"text": "finished {{b.error}}"})


def wait_for_sleepers(mark: str, count: int = 3) -> None:
    wait_for(lambda: len(sleepers(mark)) >= count, what="the bash call's processes to start")


def assert_gone(mark: str) -> None:
    settle(lambda: not sleepers(mark), seconds=3)
    left = sleepers(mark)
    for proc in left:
        proc.kill()
    assert not left, f"processes left behind: {left}"


@contextmanager
def scv_process(*args: str) -> Iterator[subprocess.Popen]:
    """`python -m scv ARGS` in the background (stdin from /dev/null, text pipes for its output) for
    the `with` block; a process still running when the block ends (the test failed) is killed and
    reaped, never left behind."""
    proc = subprocess.Popen([sys.executable, "-m", "scv", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=scv_env())
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        # Not communicate(): a descendant that left the group could hold the pipes open forever.
        for stream in (proc.stdout, proc.stderr):
            stream.close()


def finish(proc: subprocess.Popen, signal_number: int | None = None, timeout: float = 30) -> tuple[str, str]:
    """Sends `signal_number` (if any), then collects the process's output and status."""
    if signal_number is not None:
        proc.send_signal(signal_number)
    return proc.communicate(timeout=timeout)
