"""Issue 22's benchmarks, each against a baseline measured in the same run:
- `scv mcp` from start to its `tools/list` answered, against `scv server --stdio` from start to its
  `initialize` answered, interleaved round by round;
- an MCP tool call's cost in `scv exec` (the script provider calling `echo` of the SDK test server
  CALLS times, less the same run without the calls, per call), against a direct call of the
  official SDK client to the same server."""

import asyncio
import json
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


CALLS = 150
SERVER = ROOT / "tests" / "mcp_tool_server.py"


def _exec_seconds(ws: Path, env: dict, tmp: Path, calls: int) -> float:
    script = tmp / f"calls-{calls}.jsonl"
    turns = [{"calls": [{"id": f"c{i}", "tool": "mcp__tools__echo", "args": {"text": "x"}} for i in range(calls)]}]
    script.write_text("\n".join(json.dumps(t) for t in (turns if calls else []) + [{"text": "done"}]) + "\n")
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tools": {"command": sys.executable, "args": [str(SERVER)]}}}))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "scv", "exec", "--script", str(script), "--mcp-config", str(config),
                    "-C", str(ws)], env=env, check=True, capture_output=True, timeout=300)
    return time.perf_counter() - started


def _sdk_per_call() -> float:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> float:
        params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("echo", {"text": "warm"})
                started = time.perf_counter()
                for _ in range(CALLS):
                    await session.call_tool("echo", {"text": "x"})
                return (time.perf_counter() - started) / CALLS
    return asyncio.run(run())


def tool_calls() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        env = dict(os.environ, SCV_HOME=str(Path(tmp) / "home"))
        _exec_seconds(ws, env, Path(tmp), 1)        # bytecode written, caches warm
        rounds = []
        for _ in range(3):
            without = _exec_seconds(ws, env, Path(tmp), 0)
            with_calls = _exec_seconds(ws, env, Path(tmp), CALLS)
            rounds.append(((with_calls - without) / CALLS, _sdk_per_call()))
        scv = statistics.median(a for a, _ in rounds)
        sdk = statistics.median(b for _, b in rounds)
    line(f"SDK client -> SDK server: one tools/call (median of 3 x {CALLS})", f"{sdk * 1e3:.2f} ms")
    line("scv exec -> same server: one MCP tool call", f"{scv * 1e3:.2f} ms  ratio {scv / sdk:.2f}")


def main() -> None:
    start_up()
    tool_calls()


def start_up() -> None:
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
