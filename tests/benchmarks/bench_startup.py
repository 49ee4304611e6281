"""Issue 15's start-up benchmark: whole `scv` processes as a script or CI job starts them, against
the bare interpreter start (`python -c pass`) from the same virtual environment, interleaved
round by round in one run so that machine noise hits all of them alike. `scv exec` runs against
the fake model server: launch to the first model request (its arrival at the server) and the
whole run of a turn with no tool call."""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import line, timed
from tests.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 21
EXEC_FIRST = "bin/scv exec: launch to first model request"
EXEC_WHOLE = "bin/scv exec: whole run, no tool call"
EXEC_TOOL = "bin/scv exec: first tool call (read), model request to model request"
FLOOR = "python: click, and msgspec as scv/entry.py imports it (under click's lines)"
PLAIN_FLOOR = "python: msgspec as scv/entry.py imports it (under a plain exec or tool line)"


def main() -> None:
    fake = FakeOpenAI()
    try:
        _measure(fake)
    finally:
        fake.close()


def _measure(fake: FakeOpenAI) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "ok.txt").write_text("a short file\n")
        # A home of its own: no user configuration, and agent discovery finds the same every time.
        env = dict(os.environ, SCV_HOME=str(Path(tmp) / "home"))
        # Measure what a checkout or an installed copy runs: compiled bytecode, written once.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        (Path(tmp) / "home").mkdir()
        (Path(tmp) / "home" / "config.toml").write_text(fake.config("responses"))
        env["FAKE_OPENAI_KEY"] = "sk-test"
        wrapper = str(ROOT / "bin" / "scv")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            # What every command imports before any SCV code: the floor under each ratio below.
            FLOOR: [sys.executable, "-c", "from scv.entry import import_msgspec_alone; import_msgspec_alone(); import click"],
            PLAIN_FLOOR: [sys.executable, "-c", "from scv.entry import import_msgspec_alone; import_msgspec_alone()"],
            "bin/scv tool read '{\"path\":\"ok.txt\"}'": [wrapper, "tool", "read", '{"path":"ok.txt"}'],
            "python -m scv tool read (no wrapper)": [sys.executable, "-m", "scv", "tool", "read", '{"path":"ok.txt"}'],
            "bin/scv --help": [wrapper, "--help"],
            "bin/scv tools": [wrapper, "tools"],
        }

        def run(argv: list[str]) -> None:
            subprocess.run(argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

        exec_argv = [wrapper, "exec", "say hello"]

        def first_request() -> tuple[float, float]:
            """(launch to the first model request, the whole run) of one `scv exec`."""
            fake.enqueue(Reply(text="hello"))
            seen = len(fake.requests)
            started = time.monotonic()
            run(exec_argv)
            ended = time.monotonic()
            return fake.requests[seen].at - started, ended - started

        def first_tool_call() -> float:
            """From the model's first request to its second, with one `read` call between them (the
            fake answers at once, so the call finds the fork point as early as it ever can)."""
            fake.enqueue(Reply(calls=[("c1", "read", '{"path": "ok.txt"}')]), Reply(text="done"))
            seen = len(fake.requests)
            run(exec_argv)
            return fake.requests[seen + 1].at - fake.requests[seen].at

        for argv in commands.values():
            run(argv)
        first_request()
        first_tool_call()
        times: dict[str, list[float]] = {label: [] for label in commands}
        times[EXEC_FIRST], times[EXEC_WHOLE], times[EXEC_TOOL] = [], [], []
        for _ in range(ROUNDS):
            for label, argv in commands.items():
                times[label].append(timed(lambda: run(argv)))
            to_request, whole = first_request()
            times[EXEC_FIRST].append(to_request)
            times[EXEC_WHOLE].append(whole)
            times[EXEC_TOOL].append(first_tool_call())
    medians = {label: statistics.median(values) for label, values in times.items()}
    bare = medians["python -c pass"]
    line(f"python -c pass, same venv (median of {ROUNDS})", f"{bare * 1e3:.1f} ms")
    for label, took in medians.items():
        if label == "python -c pass":
            continue
        target = "" if label.startswith("python -m") or label in (EXEC_WHOLE, EXEC_TOOL, FLOOR, PLAIN_FLOOR) else "  (target <= 6.0)"
        line(label, f"{took * 1e3:.1f} ms  ratio {took / bare:.2f}{target}")
