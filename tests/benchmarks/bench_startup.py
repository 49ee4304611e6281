"""Issue 15's start-up benchmark: whole `scv` processes as a script or CI job starts them, against
the bare interpreter start (`python -c pass`) from the same virtual environment, interleaved
round by round in one run so that machine noise hits all of them alike."""

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.common import line, timed

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 21


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "ok.txt").write_text("a short file\n")
        # A home of its own: no user configuration, and agent discovery finds the same every time.
        env = dict(os.environ, SCV_HOME=str(Path(tmp) / "home"))
        # Measure what a checkout or an installed copy runs: compiled bytecode, written once.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        wrapper = str(ROOT / "bin" / "scv")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "bin/scv tool read '{\"path\":\"ok.txt\"}'": [wrapper, "tool", "read", '{"path":"ok.txt"}'],
            "python -m scv tool read (no wrapper)": [sys.executable, "-m", "scv", "tool", "read", '{"path":"ok.txt"}'],
            "bin/scv --help": [wrapper, "--help"],
            "bin/scv tools": [wrapper, "tools"],
        }

        def run(argv: list[str]) -> None:
            subprocess.run(argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

        for argv in commands.values():
            run(argv)
        times: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(ROUNDS):
            for label, argv in commands.items():
                times[label].append(timed(lambda: run(argv)))
    medians = {label: statistics.median(values) for label, values in times.items()}
    bare = medians["python -c pass"]
    line(f"python -c pass, same venv (median of {ROUNDS})", f"{bare * 1e3:.1f} ms")
    for label, took in medians.items():
        if label == "python -c pass":
            continue
        target = "" if label.startswith("python -m") else "  (target <= 6.0)"
        line(label, f"{took * 1e3:.1f} ms  ratio {took / bare:.2f}{target}")
