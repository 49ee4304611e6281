"""web_fetch of a generated ~2 MiB HTML page, end to end through the real supervisor from a
loopback server, against readability-lxml's own extraction of the same page in this process.
Target: the whole fetch costs at most 1.25x the extraction alone."""

import random
import statistics
import time
from pathlib import Path
import tempfile

import msgspec
from readability import Document

from scv.config.load import Config
from scv.session.calls import ToolRunner
from scv.supervision.approval import approve_all
from scv.supervision.supervisor import Supervisor
from scv.tools.base import ToolContext
from scv.tools.registry import Registry, executor_modules
from scv.tools.web_fetch import WebFetchTool

ROUNDS = 7
TARGET_BYTES = 2 * 1024 * 1024 - 64 * 1024       # under web.fetch_max_bytes, so nothing is cut
WORDS = ("runtime scheduler task future stream buffer socket request response handler thread pool queue "
         "latency throughput memory allocation cache kernel driver packet protocol release version").split()


def make_page(seed: int = 7) -> bytes:
    rng = random.Random(seed)

    def sentence() -> str:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
        if rng.random() < 0.3:
            at = rng.randrange(len(words))
            words[at] = f'<a href="/docs/{rng.randint(1, 500)}">{words[at]}</a>'
        return " ".join(words).capitalize() + ", " + " ".join(rng.choice(WORDS) for _ in range(6)) + "."

    head = ['<!DOCTYPE html><html><head><meta charset="utf-8"><title>Release notes of a runtime</title>'
            '<style>body{font-family:sans-serif}</style></head><body>',
            '<header class="site-header"><nav>' + " ".join(f'<a href="/nav/{n}">Section {n}</a>' for n in range(60))
            + "</nav></header>",
            '<div class="sidebar">' + "".join(f'<p><a href="/tag/{n}">tag {n}</a></p>' for n in range(80)) + "</div>",
            '<main><article class="post-content">']
    tail = ["</article></main>",
            '<div class="comments">' + "".join(f"<div class='comment'><p>{sentence()}</p></div>" for _ in range(40))
            + "</div>", '<footer class="footer"><p>Copyright</p></footer></body></html>']
    body, size = [], sum(len(part) for part in head + tail)
    section = 0
    while size < TARGET_BYTES:
        section += 1
        chunk = f"<h2>Part {section}</h2>" + "".join(
            f"<p>{' '.join(sentence() for _ in range(rng.randint(3, 6)))}</p>" for _ in range(rng.randint(3, 8)))
        if section % 5 == 0:
            chunk += "<ul>" + "".join(f"<li>{sentence()}</li>" for _ in range(5)) + "</ul>"
        if section % 7 == 0:
            chunk += "<pre><code>fn main() {\n    println!(\"hello\");\n}</code></pre>"
        body.append(chunk)
        size += len(chunk)
    page = "".join(head + body + tail).encode()
    return page[:TARGET_BYTES] if len(page) > TARGET_BYTES else page


def _times(action, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    page = make_page()
    # The supervisor forks its fork point first: no thread may exist yet (the server starts one).
    supervisor = Supervisor(preload=executor_modules())
    from tests.web_fakes import LoopbackServer, Reply
    server = LoopbackServer({"/page": Reply(body=page)})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ctx = ToolContext(workspace=Path(tmp).resolve(), config=msgspec.convert({}, Config))
            registry = Registry()
            registry.register(WebFetchTool(loopback_ports=frozenset({server.port})))   # test-only allowance
            runner = ToolRunner(supervisor, registry, ctx, approve_all)
            url = server.url("/page")

            def extract() -> None:
                Document(page.decode("utf-8")).summary(html_partial=True)

            def fetch() -> None:
                result = runner.call("web_fetch", {"url": url})
                assert result.ok, result.value

            extract()
            fetch()                                  # warm both paths once
            baseline, measured = [], []
            for _ in range(ROUNDS):                  # interleaved, so load on the machine hits both alike
                baseline += _times(extract, 1)
                measured += _times(fetch, 1)
    finally:
        server.close()
        supervisor.close()
    base, full = statistics.median(baseline), statistics.median(measured)
    print(f"   page: {len(page) / 1048576:.2f} MiB of generated HTML, {ROUNDS} rounds each (median)")
    print(f"   baseline  readability Document(page).summary() in process: {base * 1000:8.1f} ms/page "
          f"(min {min(baseline) * 1000:.1f})")
    print(f"   measured  web_fetch via supervisor + worker + loopback:     {full * 1000:8.1f} ms/page "
          f"(min {min(measured) * 1000:.1f})")
    print(f"   ratio {full / base:.3f}x of the medians, {min(measured) / min(baseline):.3f}x of the fastest rounds "
          "(target <= 1.25x)")
