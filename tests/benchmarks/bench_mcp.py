"""Issue 22's start-up benchmark: `scv mcp` from start to its `tools/list` answered, against
`scv server --stdio` from start to its `initialize` answered, interleaved round by round in one
run. (The MCP-tool-call overhead in `scv exec` waits for `scv exec`'s MCP client.)"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import line

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 11
MCP = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}\n'
       b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
SCV = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocol_version":3}}\n'


def _until_answered(argv: list[str], ws: Path, env: dict, request: bytes, answers: int) -> float:
    """Seconds from start to the last answer; the shutdown after it is not counted."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    proc.stdin.write(request)
    proc.stdin.flush()
    for _ in range(answers):
        if not proc.stdout.readline():
            raise RuntimeError(f"{argv} ended before answering")
    took = time.perf_counter() - started
    proc.stdin.close()
    proc.wait(60)
    return took


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        env = dict(os.environ, SCV_HOME=str(Path(tmp) / "home"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = [sys.executable, "-m", "scv"]
        mcp = lambda: _until_answered([*base, "mcp"], ws, env, MCP, 2)                 # noqa: E731
        server = lambda: _until_answered([*base, "server", "--stdio"], ws, env, SCV, 1)  # noqa: E731
        mcp(), server()     # bytecode written, caches warm
        rounds = [(mcp(), server()) for _ in range(ROUNDS)]     # interleaved: machine noise hits both alike
        took_mcp = statistics.median(a for a, _ in rounds)
        took_server = statistics.median(b for _, b in rounds)
    line(f"scv server --stdio start -> initialize answered (median of {ROUNDS})", f"{took_server * 1e3:.1f} ms")
    line("scv mcp start -> tools/list answered", f"{took_mcp * 1e3:.1f} ms  ratio {took_mcp / took_server:.2f}")
