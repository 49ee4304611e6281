"""web_fetch end to end: real supervisor, real worker, real loopback servers."""

import functools
import gzip
import json
import struct
import threading
import zlib

import pytest

from scv.core.cancellation import Cancellation
from scv.core.errors import RefusedError
from scv.core.web.addresses import AddressPolicy
from scv.core.web.urls import parse_url
from tests.fakes import wait_for
from tests.web_fakes import LoopbackServer, Reply, begin_text_body, free_port, stream_body
from tests.web_runners import web_config, web_runner
from workers.runtime import ToolFailure
from workers.web_transport import checked_addresses

ARTICLE = b"""<html><head><title>Tokio release notes</title></head><body>
<nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
<article><h1>Tokio 1.40</h1>
<p>This release adds <a href="/docs/task">task hooks</a>, improves the scheduler, and fixes a number of
bugs reported by users, which is why everyone should upgrade soon, as the notes explain at length.</p>
<p>See the <a href="https://crates.io/crates/tokio">crate page</a> and the <a href="/docs/task">task docs</a>
again, with more words, commas, and details so that the readability scoring keeps this paragraph.</p>
<script>document.write("tracking")</script>
</article><footer>Copyright</footer></body></html>"""


@pytest.fixture
def server(supervisor):
    # Depends on the supervisor so that its fork point exists before the server's thread does.
    srv = LoopbackServer()
    yield srv
    srv.close()


def fetch(runner, url: str, **args):
    return runner.call("web_fetch", {"url": url, **args})


def test_html_becomes_text_with_numbered_links_and_a_link_list(supervisor, workspace, server):
    server.routes["/notes"] = Reply(body=ARTICLE)
    result = fetch(web_runner(supervisor, workspace, web_config(), [server.port]), server.url("/notes"))
    assert result.ok, result.value
    value = result.value
    assert list(value)[:4] == ["url", "status", "content_type", "range"]
    assert value["url"] == server.url("/notes") and value["status"] == 200
    text = value["content"]
    assert value["range"] == f"characters 0-{len(text)} of {len(text)}"
    assert "# Tokio release notes" in text and "task hooks [1]" in text and "crate page [2]" in text
    assert "task docs [1]" in text                      # the same target keeps its number
    assert "tracking" not in text and "document.write" not in text
    assert text.endswith(f"Links:\n[1] {server.url('/docs/task')}\n[2] https://crates.io/crates/tokio")
    assert "next_offset" not in value


def test_requests_carry_the_user_agent_and_nothing_identifying(supervisor, workspace, server):
    server.routes["/"] = Reply(body=b"<p>hi</p>", headers={"Set-Cookie": "session=secret"})
    server.routes["/again"] = Reply(302, headers={"Location": "/", "Set-Cookie": "other=1"})
    result = fetch(web_runner(supervisor, workspace, web_config(), [server.port]), server.url("/again"))
    assert result.ok, result.value
    for seen in server.seen:
        assert seen.headers["user-agent"].startswith("scv/")
        assert seen.headers["host"] == f"127.0.0.1:{server.port}"
        assert not {"cookie", "referer", "authorization", "proxy-authorization"} & set(seen.headers)


def test_json_and_plain_text_pass_through(supervisor, workspace, server):
    document = {"name": "tokio", "versions": ["1.40.0", "1.39.3"], "note": "<b>not html</b>"}
    server.routes["/api"] = Reply(body=json.dumps(document).encode(), content_type="application/json")
    server.routes["/plain"] = Reply(body="plain text, naïve café\n".encode("latin-1"),
                                    content_type="text/plain; charset=iso-8859-1")
    runner = web_runner(supervisor, workspace, web_config(), [server.port])
    api = fetch(runner, server.url("/api"))
    assert api.ok and json.loads(api.value["content"]) == document
    assert api.value["content_type"] == "application/json"
    plain = fetch(runner, server.url("/plain"))
    assert plain.ok and plain.value["content"] == "plain text, naïve café\n"


@pytest.mark.parametrize("content_type", ["image/png", "application/pdf", "application/zip", "video/mp4",
                                          "audio/mpeg", "application/octet-stream", "application/x-zip-compressed",
                                          "application/x-gtar"])
def test_binary_type_is_refused_before_the_body_downloads(supervisor, workspace, server, content_type):
    total = 64 << 20
    record: dict = {}
    server.routes["/file"] = stream_body(total, content_type, record, "sent")
    result = fetch(web_runner(supervisor, workspace, web_config(), [server.port]), server.url("/file"))
    assert not result.ok
    assert "binary type" in result.value["error"] and content_type in result.value["error"]
    wait_for(lambda: "sent" in record, timeout=10, what="the server to finish sending")
    assert record["sent"] < total // 4, "the client read the body instead of hanging up"


def test_undeclared_binary_is_refused_after_sniffing(supervisor, workspace, server):
    server.routes["/blob"] = Reply(body=b"\x89PNG\r\n\x1a\n\x00\x00\x00" * 100, content_type=None)
    result = fetch(web_runner(supervisor, workspace, web_config(), [server.port]), server.url("/blob"))
    assert not result.ok and "binary data" in result.value["error"]


def test_download_stops_at_fetch_max_bytes(supervisor, workspace, server):
    total = 64 << 20
    record: dict = {}
    server.routes["/big"] = stream_body(total, "text/plain", record, "sent", chunk=b"line of text\n" * 5000)
    config = web_config(tools={"output_limit_bytes": 1 << 20}, fetch_max_bytes=100_000)
    result = fetch(web_runner(supervisor, workspace, config, [server.port]), server.url("/big"))
    assert result.ok, result.value
    assert len(result.value["content"].encode()) <= 100_000
    assert result.value["content"].startswith("line of text\n")
    assert "web.fetch_max_bytes" in result.value["download_note"]
    wait_for(lambda: "sent" in record, timeout=10, what="the server to finish sending")
    assert record["sent"] < total // 4


def test_long_text_is_paged_by_offset_within_the_output_limit(supervisor, workspace, server):
    lines = [f"{n:05d} naïve café ✓ 😀 " + "x" * (n % 50) for n in range(600)]
    body = "\n".join(lines) + "\n"
    server.routes["/long"] = Reply(body=body.encode(), content_type="text/plain; charset=utf-8")
    config = web_config(tools={"output_limit_bytes": 4096})
    runner = web_runner(supervisor, workspace, config, [server.port])
    pieces, offset, calls = [], 0, 0
    while True:
        result = fetch(runner, server.url("/long"), offset=offset)
        assert result.ok, result.value
        value = result.value
        assert len(json.dumps(value, ensure_ascii=False).encode()) <= 4096
        assert value["range"].startswith(f"characters {offset}-")
        pieces.append(value["content"])
        calls += 1
        if "next_offset" not in value:
            break
        assert value["next_offset"] == offset + len(value["content"])
        assert f"offset {value['next_offset']}" in value["note"]
        offset = value["next_offset"]
    assert "".join(pieces) == body and calls > 5
    past = fetch(runner, server.url("/long"), offset=len(body) + 10)
    assert not past.ok and "past the end" in past.value["error"]


def test_redirects_are_followed_up_to_the_limit(supervisor, workspace, server):
    for n in range(4):
        server.routes[f"/r{n}"] = Reply(302, headers={"Location": f"/r{n + 1}"})
    server.routes["/r4"] = Reply(body=b"<p>arrived at the end of the chain, finally, after many hops.</p>")
    runner = web_runner(supervisor, workspace, web_config(max_redirects=4), [server.port])
    result = fetch(runner, server.url("/r0"))
    assert result.ok and result.value["url"] == server.url("/r4")
    assert result.value["redirected_from"] == server.url("/r0")
    short = web_runner(supervisor, workspace, web_config(max_redirects=3), [server.port])
    failed = fetch(short, server.url("/r0"))
    assert not failed.ok
    assert "more than 3 times" in failed.value["error"] and server.url("/r4") in failed.value["error"]


@pytest.mark.parametrize("target, why", [
    ("http://127.0.0.1:{other}/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://localhost:{other}/", "loopback"),
    ("http://0.0.0.0:{port}/", "unspecified"),
    ("http://[::1]:{port}/", "loopback"),
    ("http://[::ffff:127.0.0.1]:{port}/", "loopback"),
    ("http://10.1.2.3/", "private"),
    ("http://100.64.0.1/", "shared"),
    ("http://user:pw@example.com/", "credentials"),
    ("file:///etc/passwd", "scheme"),
])
def test_redirects_to_private_or_invalid_targets_are_refused(supervisor, workspace, server, target, why):
    target = target.format(port=server.port, other=free_port())
    server.routes["/go"] = Reply(302, headers={"Location": target})
    result = fetch(web_runner(supervisor, workspace, web_config(), [server.port]), server.url("/go"))
    assert not result.ok
    assert why in result.value["error"]
    assert [seen.path for seen in server.seen] == ["/go"]


def test_the_test_allowance_is_port_aware_and_loopback_is_refused_without_it(supervisor, workspace, server):
    server.routes["/"] = Reply(body=b"<p>hello</p>")
    other = LoopbackServer({"/": Reply(body=b"<p>other</p>")})
    try:
        allowed = web_runner(supervisor, workspace, web_config(), [server.port])
        assert fetch(allowed, server.url("/")).ok
        # An IP literal needs no lookup: it is refused before approval, so nobody is asked about it.
        with pytest.raises(RefusedError, match=r"^web_fetch refused the URL: 127\.0\.0\.1 is a loopback address; "):
            allowed.prepare("web_fetch", {"url": other.url("/")})
        with pytest.raises(RefusedError, match="loopback address"):
            web_runner(supervisor, workspace, web_config()).prepare("web_fetch", {"url": server.url("/")})
        # A name is judged by the worker after its one lookup.
        strict = fetch(web_runner(supervisor, workspace, web_config()), server.url("/", host="localhost"))
        assert not strict.ok and "localhost resolves to 127.0.0.1, a loopback address" in strict.value["error"]
        assert other.seen == [] and len(server.seen) == 1
    finally:
        other.close()


def test_allow_private_addresses_turns_the_check_off(supervisor, workspace, server):
    server.routes["/"] = Reply(body=b"<p>private but allowed</p>")
    runner = web_runner(supervisor, workspace, web_config(allow_private_addresses=True))
    result = fetch(runner, server.url("/", host="localhost"))
    assert result.ok and "private but allowed" in result.value["content"]


@pytest.mark.parametrize("host", ["127.1", "0x7f.1", "0x7f000001", "017700000001", "2130706433", "0177.0.0.1",
                                  "127.0.0.01", "127.0.1", "127。0。0。1", "127.0.0.1.", "0", "1.2.3.4.5"])
def test_unusual_ipv4_spellings_are_refused_before_any_worker(supervisor, workspace, host):
    runner = web_runner(supervisor, workspace, web_config())
    with pytest.raises(RefusedError, match="web_fetch refused the URL"):
        runner.prepare("web_fetch", {"url": f"http://{host}/"})


@pytest.mark.parametrize("host, why", [
    ("[::ffff:7f00:1]", "loopback"),
    ("[64:ff9b::7f00:1]", "loopback"),
    ("[::127.0.0.1]", "IPv4-compatible"),
    ("[2002:7f00:1::1]", "loopback"),
    ("[::ffff:100.64.0.1]", "shared"),
    ("[::ffff:169.254.169.254]", "link-local"),
    ("[fe80::1]", "link-local"),
    ("[fc00::1]", "unique-local"),
    ("[fec0::1]", "site-local"),
    ("[ff02::1]", "multicast"),
    ("[2001::1]", "Teredo"),
    ("[3fff::1]", "documentation"),
    ("[::]", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("192.0.2.1", "documentation"),
    ("255.255.255.255", "reserved"),
])
def test_ip_literals_in_refused_ranges_are_refused_before_approval(supervisor, workspace, host, why):
    url = f"http://{host}:8080/"
    asked = []
    runner = web_runner(supervisor, workspace, web_config(), approver=lambda *request: asked.append(request) or True)
    with pytest.raises(RefusedError) as refused:
        runner.call("web_fetch", {"url": url})
    assert why in str(refused.value) and "web.allow_private_addresses" in str(refused.value)
    assert asked == []
    # The worker judges a literal the same way, whatever reaches it.
    with pytest.raises(ToolFailure, match=why):
        checked_addresses(parse_url(url), AddressPolicy())


@pytest.mark.parametrize("url, words", [
    ("http://user:secret@example.com/", "credentials"),
    ("http://user@example.com/", "credentials"),
    ("https://:pw@example.com/", "credentials"),
    ("ftp://example.com/file", "scheme is ftp"),
    ("file:///etc/passwd", "scheme is file"),
    ("javascript:alert(1)", "scheme is javascript"),
    ("http://127.0.0.1\\@93.184.216.34/", "backslash"),
    ("http://exa mple.com/", "whitespace"),
    ("http://localhost\x00.example.com/", "control character"),
    ("//example.com/", "no scheme"),
    ("http://ex%61mple.com/", "percent"),
])
def test_bad_urls_are_refused_with_a_sentence(supervisor, workspace, url, words):
    runner = web_runner(supervisor, workspace, web_config())
    with pytest.raises(RefusedError) as caught:
        runner.prepare("web_fetch", {"url": url})
    assert words in str(caught.value)


def test_http_error_status_returns_the_body_as_a_failed_result(supervisor, workspace, server):
    server.routes["/missing"] = Reply(404, b"<html><body><h1>Not here</h1><p>The page you asked for is gone, "
                                           b"moved, or never existed at all.</p></body></html>")
    result = fetch(web_runner(supervisor, workspace, web_config(), [server.port]), server.url("/missing"))
    assert not result.ok
    assert result.value["status"] == 404 and "HTTP 404" in result.value["error"]
    assert "never existed" in result.value["content"]


def test_a_failed_result_with_long_server_fields_stays_within_the_output_limit(supervisor, workspace, server):
    path = "/" + "p" * 1000

    def answer(handler):
        body = b"the missing page says so at length\n" * 2000
        handler.send_response(404, "Gone " * 2000)
        handler.send_header("Content-Type", "text/plain; note=" + '"' * 1000)
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body)
    server.routes[path] = answer
    runner = web_runner(supervisor, workspace, web_config(tools={"output_limit_bytes": 4096}), [server.port])
    result = fetch(runner, server.url(path))
    assert not result.ok
    value = result.value
    assert len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()) <= 4096
    assert value["error"].startswith(f"{server.url(path)} answered HTTP 404 Gone Gone")
    assert len(value["content_type"]) == 200 and value["content"].startswith("the missing page says so")
    assert value["next_offset"] == len(value["content"])


def test_a_page_of_unclosed_title_tags_converts_in_one_pass(supervisor, workspace, server):
    # A title pattern that scans to the end from each "<title>" would take hours on this page.
    server.routes["/titles"] = Reply(body=b"<html><head>" + b"<title>" * 150_000 + b"<p>text</p>")
    runner = web_runner(supervisor, workspace, web_config(fetch_timeout_seconds=5), [server.port])
    result = fetch(runner, server.url("/titles"))
    assert result.ok, result.value


BOMB_BYTES = 256 << 20


@functools.lru_cache(maxsize=1)
def _bomb_stream() -> tuple[bytes, int, int]:
    """One raw deflate stream of 256 MiB of "A" (about 250 KiB), with its CRC-32 and Adler-32."""
    block = b"A" * (1 << 20)
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    parts, crc, adler = [], 0, 1
    for _ in range(BOMB_BYTES // len(block)):
        parts.append(packer.compress(block))
        crc, adler = zlib.crc32(block, crc), zlib.adler32(block, adler)
    parts.append(packer.flush())
    return b"".join(parts), crc, adler


def _bomb(encoding: str) -> bytes:
    raw, crc, adler = _bomb_stream()
    if encoding == "gzip":
        return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + raw + struct.pack("<II", crc, BOMB_BYTES & 0xFFFFFFFF)
    if encoding == "deflate":
        return b"\x78\x9c" + raw + struct.pack(">I", adler)
    return raw


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_decompression_bomb_stops_at_fetch_max_bytes(supervisor, workspace, server, encoding):
    header = "gzip" if encoding == "gzip" else "deflate"
    server.routes["/bomb"] = Reply(body=_bomb(encoding), headers={"Content-Encoding": header},
                                   content_type="text/plain")
    config = web_config(tools={"worker_memory_mb": 192, "output_limit_bytes": 2 << 20}, fetch_max_bytes=1 << 20)
    result = fetch(web_runner(supervisor, workspace, config, [server.port]), server.url("/bomb"))
    assert result.ok, result.value
    assert "download_note" in result.value
    assert result.value["content"] == "A" * (1 << 20)


def test_gzip_bodies_are_decoded(supervisor, workspace, server):
    server.routes["/z"] = Reply(body=gzip.compress(b"<p>compressed words, decoded by the worker.</p>"),
                                headers={"Content-Encoding": "gzip"})
    server.routes["/br"] = Reply(body=b"whatever", headers={"Content-Encoding": "br"})
    runner = web_runner(supervisor, workspace, web_config(), [server.port])
    result = fetch(runner, server.url("/z"))
    assert result.ok and "compressed words, decoded" in result.value["content"]
    refused = fetch(runner, server.url("/br"))
    assert not refused.ok and "'br'" in refused.value["error"]


def test_a_hostile_page_fails_that_call_only(supervisor, workspace, server):
    # Millions of elements: the parse alone needs far more than the worker's 256 MiB ceiling. (128 MiB
    # left a normal page no room once the suite's own process, which the fork point is forked from, had
    # grown: its worker could not start a thread.)
    server.routes["/hostile"] = Reply(body=b"<html><body>" + b"<i>a</i>" * (2 << 20))
    server.routes["/fine"] = Reply(body=b"<p>still working, after the hostile page was dealt with.</p>")
    tight = web_config(tools={"worker_memory_mb": 256}, fetch_max_bytes=32 << 20)
    runner = web_runner(supervisor, workspace, tight, [server.port])
    before = fetch(runner, server.url("/fine"))
    assert before.ok, "a normal page must fit under the same ceiling, or this test proves nothing"
    result = fetch(runner, server.url("/hostile"))
    assert not result.ok
    assert "memory" in result.value["error"] or "worker ended without a result" in result.value["error"]
    after = fetch(runner, server.url("/fine"))
    assert after.ok and "still working" in after.value["content"]


def test_deep_nesting_and_huge_attributes_do_not_break_the_worker(supervisor, workspace, server):
    server.routes["/deep"] = Reply(body=b"<html><body><p>Before the nesting, some words.</p>" + b"<div>" * 400_000)
    server.routes["/attr"] = Reply(body=b"<html><body><p title='" + b"a" * (1 << 20) + b"'>Visible words.</p>")
    runner = web_runner(supervisor, workspace, web_config(), [server.port])
    deep = fetch(runner, server.url("/deep"))
    assert deep.ok or "nested" in deep.value["error"]
    attr = fetch(runner, server.url("/attr"))
    assert attr.ok and "Visible words." in attr.value["content"] and "aaaa" not in attr.value["content"]


def test_a_server_that_stalls_hits_the_fetch_timeout(supervisor, workspace, server):
    released = threading.Event()

    def stall(handler):
        begin_text_body(handler, 1000, b"partial")
        released.wait(60)       # held open until the test has its result: only the deadline ends the fetch
    server.routes["/stall"] = stall
    try:
        result = fetch(web_runner(supervisor, workspace, web_config(fetch_timeout_seconds=1), [server.port]),
                       server.url("/stall"))
    finally:
        released.set()
    assert not result.ok and "web.fetch_timeout_seconds" in result.value["error"]


def test_cancelling_a_stalled_download_ends_it_in_the_worker(supervisor, workspace, server):
    started, released = threading.Event(), threading.Event()

    def stall(handler):
        begin_text_body(handler, 100000, b"the first bytes arrive, then nothing more")
        started.set()
        released.wait(60)       # held open until the test has its result
    server.routes["/stall"] = stall
    runner = web_runner(supervisor, workspace, web_config(), [server.port])
    cancel = Cancellation()
    # Cancelled once the download is under way, so the worker is blocked reading the body.
    watcher = threading.Thread(target=lambda: started.wait(60) and cancel.cancel(), daemon=True)
    watcher.start()
    try:
        result = runner.run(runner.prepare("web_fetch", {"url": server.url("/stall")}), cancel=cancel)
    finally:
        started.set()
        released.set()
        watcher.join()
        cancel.close()
    assert not result.ok
    # The worker's own sentence: the watcher woke the blocked read, no backstop kill was needed.
    assert result.value["error"] == "the call was cancelled"
