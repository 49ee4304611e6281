"""Agent output parsing: a 200 MB synthetic stream of each structured format (Claude Code
stream-json, Codex --json, pi --mode json), with a few 5 MiB lines, fed in 1 MiB chunks (as the
process runner reads a pipe) through the line splitter and the adapter's parser.

Each format runs twice: with only the events of the captured runs repeated (short events, the
worst case per byte), and as a working run whose commands' output comes back in the stream.
Prints MB/s and the peak resident memory growth, against a baseline measured in the same
process: the same chunks only scanned for newlines. The target is at least 100 MB/s,
with memory bounded by the 4 MiB line limit rather than the stream size.
"""

import json
import os
import time

from tests.benchmarks.common import PeakMemory, chunked_stream, line, rss_bytes
from tests.agent_fakes import CAPTURES
from scv.core.lines import MAX_LINE_BYTES, LineSplitter
from workers.agents.parse_claude import ClaudeStreamParser
from workers.agents.parse_codex import CodexJsonParser
from workers.agents.parse_pi import PiJsonParser

STREAM_BYTES = 200 * 1000 * 1000
CHUNK = 1 << 20
BIG_LINES = 3
BIG_LINE_BYTES = 5 << 20

FORMATS = {
    "claude stream-json": (ClaudeStreamParser, "claude", ["tool_bash_default_perms", "text_reply"]),
    "codex --json": (CodexJsonParser, "codex", ["tool_default_model", "text"]),
    "pi --mode json": (PiJsonParser, "pi", ["tool_bash", "text_defaults_from_settings"]),
}


def _work_events(agent: str) -> bytes:
    """Events of a working run: commands whose output (2 KiB here) comes back in the stream."""
    output = ("make[1]: building target " * 90)[:2048]
    events = {
        "claude": [{"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": output, "is_error": False}]}}],
        "codex": [{"type": "item.completed", "item": {"id": "item_3", "type": "command_execution",
                                                      "command": "/bin/bash -lc 'make'", "aggregated_output": output,
                                                      "exit_code": 0, "status": "completed"}}],
        "pi": [{"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash",
                "result": {"content": [{"type": "text", "text": output}]}, "isError": False}],
    }[agent]
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def _block(agent: str, captures: list[str], work: bool) -> bytes:
    """About 1 MiB of the format's real event lines (plus, for a working run, command output)."""
    lines = b"".join((CAPTURES / agent / f"{name}.jsonl").read_bytes() for name in captures)
    if work:
        lines += _work_events(agent) * 4
    return lines * max(1, CHUNK // len(lines))


def _big_line(agent: str) -> bytes:
    text = "x" * (BIG_LINE_BYTES - 200)
    event = {"claude": {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}},
             "codex": {"type": "item.completed", "item": {"type": "agent_message", "text": text}},
             "pi": {"type": "message_update", "message": {"role": "assistant", "content": text}}}[agent]
    return json.dumps(event).encode() + b"\n"


def stream(block: bytes, big: bytes):
    """Yields the synthetic stream in 1 MiB chunks without holding it."""
    return chunked_stream(block, big, STREAM_BYTES, BIG_LINES, CHUNK)


def baseline(block: bytes, big: bytes) -> tuple[float, int]:
    started, total, newlines = time.perf_counter(), 0, 0
    for chunk in stream(block, big):
        newlines += chunk.count(b"\n")
        total += len(chunk)
    return time.perf_counter() - started, total


def parse(parser_class, block: bytes, big: bytes) -> tuple[float, int, object, int]:
    parser = parser_class(lambda progress: None)
    splitter = LineSplitter(parser.lines)
    started, total = time.perf_counter(), 0
    for chunk in stream(block, big):
        splitter.feed(chunk)
        total += len(chunk)
    splitter.close()
    return time.perf_counter() - started, total, parser.report, splitter.skipped


def main() -> None:
    me = os.getpid()
    runs = [(f"{label}, {kind}", parser_class, agent, captures, kind == "working run")
            for label, (parser_class, agent, captures) in FORMATS.items()
            for kind in ("captured events only", "working run")]
    for label, parser_class, agent, captures, work in runs:
        block, big = _block(agent, captures, work), _big_line(agent)
        base_seconds, total = baseline(block, big)
        before = rss_bytes(me)
        with PeakMemory(lambda: [me]) as peak:
            seconds, total, report, skipped = parse(parser_class, block, big)
        growth = max(0, peak.peak - before)
        mb = total / 1e6
        # What the parser may hold: one line up to the limit plus one read chunk, and the decoded
        # events of one chunk's run of lines.
        bound = MAX_LINE_BYTES + 2 * CHUNK + (8 << 20)
        line(f"{label}: baseline (newline scan only)", f"{mb / base_seconds:8.0f} MB/s")
        line(f"{label}: split + parse ({mb:.0f} MB, {skipped} lines over 4 MiB skipped)",
             f"{mb / seconds:8.0f} MB/s  ratio {seconds / base_seconds:.1f}x the baseline's time")
        line(f"{label}: peak RSS growth while parsing",
             f"{growth / (1 << 20):8.1f} MiB ({'within' if growth <= bound else 'OVER'} the "
             f"{bound >> 20} MiB line-limit bound; the stream is {mb:.0f} MB)")
        line(f"{label}: target 100 MB/s", "met" if mb / seconds >= 100 else "missed")
        assert report.reply is not None
