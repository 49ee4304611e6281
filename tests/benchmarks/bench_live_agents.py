"""Live agents (workers/live/): ACP message decoding throughput, and SCV's own cost per relayed
permission request.

1. A 200 MB stream of the captured claude-agent-acp and codex-acp messages (tests/fixtures/acp/),
   with a few 4 MiB message chunks among them, fed in 1 MiB chunks (as a pipe is read) through
   the wire and one turn's state. Baseline: the same chunks only scanned for newlines. Target:
   at least 100 MB/s, with memory bounded by the lines, not the stream.
2. A real agent process (tests/benchmarks/acp_bench_peer.py) asks N permissions in a row; SCV's
   ACP client relays each through an approval gate that answers at once. Baseline: the same
   process answered by a loop that only reads a line and writes a canned answer. SCV's own cost is
   the difference per request. Target: under 5 ms.
3. Turn 2 of a conversation with one fake agent (tests/benchmarks/turn_bench_agent.py, the same
   program and start-up either way): over ACP, the prompt through SCV's ACP client to the server
   process kept since turn 1; one process per turn, the CLI backend's run (workers/agent.py) of
   `claude -p --resume ID` with the argument vector SCV builds, the program reading the
   conversation back from its file. Baseline: the resume turn. Target: ACP under half of it.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scv.core.agents.descriptors import DESCRIPTORS, build_argv
from tests.benchmarks.common import PeakMemory, chunked_stream, line, rss_bytes
from tests.live_fakes import ACP_CAPTURES, Harness, acp_args
from workers import agent as cli_backend
from workers.live import acp
from workers.live.acp_turn import TurnState
from workers.live.acp_wire import Incoming, Wire, decode_update

STREAM_BYTES = 200 * 1000 * 1000
CHUNK = 1 << 20
BIG_LINES = 4
BIG_LINE_BYTES = 4 << 20
PEER = Path(__file__).with_name("acp_bench_peer.py")
REQUESTS = 2000
TURN_AGENT = Path(__file__).with_name("turn_bench_agent.py")
TURN_ROUNDS = 9


def _recorded_block() -> bytes:
    lines = b""
    for agent, capture in (("claude", "acp_cancel"), ("claude", "acp_tool_reject"), ("claude", "acp_modes"),
                           ("codex", "text"), ("codex", "permission_reject")):
        for raw in (ACP_CAPTURES / agent / f"{capture}.transcript.jsonl").read_text().splitlines():
            entry = json.loads(raw)
            if entry["dir"] == "agent->client":
                lines += json.dumps(entry["msg"]).encode() + b"\n"
    return lines * max(1, CHUNK // len(lines))


def _big_line() -> bytes:
    chunk = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * (BIG_LINE_BYTES - 200)}}}}
    return json.dumps(chunk).encode() + b"\n"


def stream(block: bytes, big: bytes):
    """Yields the synthetic stream in 1 MiB chunks without holding it."""
    return chunked_stream(block, big, STREAM_BYTES, BIG_LINES, CHUNK)


def decode_all(block: bytes, big: bytes) -> tuple[float, int, int]:
    wire = Wire()
    state = TurnState(65536, lambda text: None)
    started, total, updates = time.perf_counter(), 0, 0
    for chunk in stream(block, big):
        total += len(chunk)
        for message in wire.feed(chunk):
            if isinstance(message, Incoming) and message.method == "session/update":
                update = decode_update(message.params)
                if update is not None:
                    updates += 1
                    state.on_update(update)
    wire.close()
    return time.perf_counter() - started, total, updates


def scan_all(block: bytes, big: bytes) -> tuple[float, int]:
    started, total, newlines = time.perf_counter(), 0, 0
    for chunk in stream(block, big):
        newlines += chunk.count(b"\n")
        total += len(chunk)
    return time.perf_counter() - started, total


def decoding() -> None:
    block, big = _recorded_block(), _big_line()
    base, total = scan_all(block, big)
    me = os.getpid()
    before = rss_bytes(me)
    with PeakMemory(lambda: [me]) as peak:
        seconds, total, updates = decode_all(block, big)
    growth = max(0, peak.peak - before)
    mb = total / 1e6
    bound = BIG_LINE_BYTES * 2 + 2 * CHUNK + (8 << 20)
    line("ACP stream: baseline (newline scan only)", f"{mb / base:8.0f} MB/s")
    line(f"ACP stream: wire + turn state ({mb:.0f} MB, {updates} updates)",
         f"{mb / seconds:8.0f} MB/s  ratio {seconds / base:.1f}x the baseline's time")
    line("ACP stream: peak RSS growth while decoding",
         f"{growth / (1 << 20):8.1f} MiB ({'within' if growth <= bound else 'OVER'} the {bound >> 20} MiB bound; "
         f"the stream is {mb:.0f} MB)")
    line("ACP stream: target 100 MB/s", "met" if mb / seconds >= 100 else "missed")


def raw_round_trips(count: int) -> float:
    """The same peer process answered by a loop that only reads a line and writes a canned answer."""
    peer = subprocess.Popen([sys.executable, str(PEER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, inp = peer.stdout, peer.stdin

    def send(data: bytes) -> None:
        inp.write(data)
        inp.flush()
    for request in (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n',
                    b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}\n'):
        send(request)
        out.readline()
    answer = b'{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}\n'
    started = time.perf_counter()
    send(b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"%d"}]}}\n'
         % count)
    for _ in range(count):
        out.readline()
        send(answer)
    out.readline()
    elapsed = time.perf_counter() - started
    inp.close()
    peer.wait()
    return elapsed


def relayed_round_trips(count: int, harness: Harness) -> float:
    args = acp_args("claude", sys.executable, str(count), server_args=[str(PEER)])
    ctx = harness.context(args, answer=lambda ask: True, timeout=600)
    agent = acp.start(args, ctx)
    try:
        started = time.perf_counter()
        result = agent.turn(args, ctx)
        elapsed = time.perf_counter() - started
    finally:
        agent.close()
    assert result["status"] == "completed" and len(ctx.asked) == count
    return elapsed


def permissions() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp) / "ws", Path(tmp) / "scv-home"
        workspace.mkdir()
        home.mkdir()
        harness = Harness(workspace, home)
        try:
            raw = min(raw_round_trips(REQUESTS) for _ in range(3))
            relayed = min(relayed_round_trips(REQUESTS, harness) for _ in range(3))
        finally:
            harness.close()
    per_raw, per_relayed = raw / REQUESTS * 1000, relayed / REQUESTS * 1000
    own = per_relayed - per_raw
    line(f"permission relay: baseline (canned answers, {REQUESTS} requests)", f"{per_raw:8.3f} ms per request")
    line("permission relay: SCV's ACP client and an instant gate",
         f"{per_relayed:8.3f} ms per request  ratio {per_relayed / per_raw:.1f}x the baseline")
    line("permission relay: SCV's own cost per request (target under 5 ms)",
         f"{own:8.3f} ms  {'met' if own < 5 else 'missed'}")


def _launcher(folder: Path) -> Path:
    """The fake agent behind one executable, as an installed CLI or server would be."""
    path = folder / "claude"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {TURN_AGENT} \"$@\"\n")
    path.chmod(0o755)
    return path


def acp_turn_two(harness: Harness, executable: Path) -> float:
    """Turn 1 starts the server (not timed); turn 2 goes to it."""
    args = acp_args("claude", executable, "hello", server_args=["--acp"])
    ctx = harness.context(args)
    agent = acp.start(args, ctx)
    try:
        assert agent.turn(args, ctx)["status"] == "completed"
        args = dict(args, prompt="and now?", turn=2)
        ctx = harness.context(args)
        started = time.perf_counter()
        result = agent.turn(args, ctx)
        elapsed = time.perf_counter() - started
    finally:
        agent.close()
    assert result["reply"].startswith("turn 2:"), result
    return elapsed


def resume_turn_two(harness: Harness, executable: Path, session: str) -> float:
    """Turn 1 (not timed) and turn 2, each one run of the CLI backend with SCV's argument vector."""
    def run(prompt: str, turn: int, **resuming) -> dict:
        argv = build_argv(DESCRIPTORS["claude"], str(executable), prompt, model=None, effort=None,
                          full_permissions=False, **resuming)
        args = {"agent": "claude", "argv": argv, "cwd": None, "full_permissions": False, "session_id": "s-bench",
                "delegation": "claude-bench", "depth": 1, "conversation": "claude-1", "turn": turn}
        return cli_backend.execute(args, harness.context(args)).value
    assert run("hello", 1, new_session=session)["status"] == "completed"
    started = time.perf_counter()
    result = run("and now?", 2, resume=session)
    elapsed = time.perf_counter() - started
    assert result["reply"].startswith("turn 2:"), result
    return elapsed


def turn_two() -> None:
    acp_times, resume_times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp) / "ws", Path(tmp) / "scv-home"
        workspace.mkdir()
        home.mkdir()
        harness = Harness(workspace, home)
        executable = _launcher(Path(tmp))
        try:
            for index in range(TURN_ROUNDS):         # alternated, so machine noise hits both alike
                acp_times.append(acp_turn_two(harness, executable))
                resume_times.append(resume_turn_two(harness, executable, f"00000000-0000-4000-8000-{index:012d}"))
        finally:
            harness.close()
    acp_s, resume_s = statistics.median(acp_times), statistics.median(resume_times)
    line(f"turn 2: baseline, one process per turn (resume; median of {TURN_ROUNDS})", f"{resume_s * 1000:8.1f} ms")
    line("turn 2: over ACP on the server process kept since turn 1",
         f"{acp_s * 1000:8.1f} ms  ratio {acp_s / resume_s:.3f}x the baseline")
    line("turn 2: target ACP under half the resume turn", "met" if acp_s < resume_s / 2 else "missed")


def main() -> None:
    decoding()
    permissions()
    turn_two()
