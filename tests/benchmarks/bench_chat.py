"""`chat_history search` over a generated 64 MiB log of 300,000 messages, through the real
supervisor and a worker: MB/s of log searched, against reading the same files raw in this
process (the baseline), and the worker's peak memory (target: at least 100 MB/s inside the
worker, peak worker memory under 64 MiB)."""

import os
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scv.chat.channel import open_channel
from scv.config.load import load_config
from scv.core.chat.archive import Message, append_messages, iter_episodes
from scv.core.oscalls import REAL
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.supervision.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import build_registry, executor_modules
from tests.benchmarks.common import PeakMemory, rss_bytes

MESSAGES = 300_000
TARGET_BYTES = 64 * 1024 * 1024
ROUNDS = 5
WORDS = ("the a to and of in is it you that for on was with he as I his they be at one have this from or had by "
         "word but what some we can out other were all there when up use your how said an each she which do their "
         "time if will way about many then them write would like so these her long make thing see him two has look "
         "more day could go come did number sound no most people my over know water than call first who may down "
         "side been now find 今天 明天 好的 谢谢 图片 文件 开会 晚饭 周末 天气").split()


def generate(folder: str) -> int:
    rng = random.Random(7)
    clock = datetime(2026, 1, 5, 8, 0, 0, tzinfo=timezone(timedelta(hours=8)))
    per_message = TARGET_BYTES // MESSAGES - 75       # the text's share of each line
    batch = []
    for n in range(MESSAGES):
        clock += timedelta(hours=9) if n % 200 == 0 else timedelta(seconds=rng.randint(5, 90))
        words, size = [], 0
        while size < per_message:
            word = rng.choice(WORDS)
            words.append(word)
            size += len(word.encode()) + 1
        if n % 15_000 == 7:
            words[3:3] = ["zebra", "quartz"]      # what the benchmark searches for: 20 messages
        batch.append(Message(time=clock, author="owner" if n % 2 else "scv", text=" ".join(words)))
        if len(batch) == 10_000:
            append_messages(folder, batch, sync=False)
            batch = []
    if batch:
        append_messages(folder, batch, sync=False)
    return sum(os.path.getsize(os.path.join(folder, e + ".jsonl")) for e in iter_episodes(folder))


def read_raw(folder: str) -> int:
    total = 0
    for episode in iter_episodes(folder):
        with open(os.path.join(folder, episode + ".jsonl"), "rb") as fh:
            while chunk := fh.read(1 << 20):
                total += len(chunk)
    return total


def main() -> None:
    supervisor = Supervisor(preload=executor_modules())    # before any thread
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["SCV_HOME"] = str(Path(tmp) / "home")
            workspace = Path(tmp) / "ws"
            workspace.mkdir()
            config = load_config(workspace)
            probe = open_channel("wechat", "default", "bench", None, None, config)
            channel = open_channel("wechat", "default", "bench", probe.conversation_dir, None, config)
            started = time.perf_counter()
            size = generate(channel.log)
            print(f"   generated {MESSAGES} messages, {size / 1048576:.1f} MiB in "
                  f"{len(list(iter_episodes(channel.log)))} episodes ({time.perf_counter() - started:.1f} s, "
                  "append_messages)", flush=True)
            ctx = ToolContext(workspace=workspace, config=config, channel=channel)
            runner = ToolRunner(supervisor, build_registry(ctx), ctx, approve_all)

            def search() -> dict:
                result = runner.call("chat_history", {"action": "search", "query": "Zebra QUARTZ", "limit": 100})
                assert result.ok, result.value
                return result.value

            found = search()
            workers = lambda: REAL.descendants(supervisor.fork_point_pid)     # noqa: E731
            baseline, measured = [], []
            with PeakMemory(workers, measure=rss_bytes, combine=max) as peak:
                for _ in range(ROUNDS):
                    t0 = time.perf_counter()
                    read_raw(channel.log)
                    baseline.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    search()
                    measured.append(time.perf_counter() - t0)
            idle = max((rss_bytes(pid) for pid in workers()), default=0)
    finally:
        supervisor.close()
    base, full = statistics.median(baseline), statistics.median(measured)
    mb = min(size, TARGET_BYTES) / 1e6
    print(f"   found {len(found['results'])} messages (more: {found['more']})")
    print(f"   baseline  raw read of the log in this process: {base * 1000:8.1f} ms ({mb / base:7.0f} MB/s)")
    print(f"   measured  chat_history search, supervisor + worker: {full * 1000:8.1f} ms ({mb / full:7.0f} MB/s, "
          f"min {mb / min(measured):.0f} MB/s; target >= 100 MB/s)")
    print(f"   ratio {full / base:.2f}x of the raw read")
    print(f"   peak worker memory (RSS, shared pages of the fork point included): {peak.peak / 1048576:.1f} MiB "
          f"(an idle spare worker: {idle / 1048576:.1f} MiB; target < 64 MiB)")
