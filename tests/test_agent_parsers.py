"""The agent output parsers, line splitter, redaction, progress throttle and conversations, as
units: each capture of the real CLIs, property tests for the validators, and the edge cases."""

import json
import time

from hypothesis import given
from hypothesis import strategies as st
import pytest

from scv.agents.conversations import Conversations
from scv.core.agents.options import check_effort, check_model, check_prompt
from scv.core.errors import RefusedError
from tests.agent_fakes import CAPTURES
from scv.core.lines import LineSplitter
from scv.core.usage import Usage
from workers.agents.capture import Tail, bound
from workers.agents.parse_claude import ClaudeStreamParser
from workers.agents.parse_codex import CodexJsonParser
from workers.agents.parse_pi import PiJsonParser
from workers.agents.progress import AgentProgress
from workers.agents.redact import redact


def parse(parser_class, agent: str, name: str, chunk: int = 7):
    lines = []
    parser = parser_class(lines.append)
    splitter = LineSplitter(parser.lines)
    data = (CAPTURES / agent / f"{name}.jsonl").read_bytes()
    for start in range(0, len(data), chunk):        # arrives in small pieces, as from a pipe
        splitter.feed(data[start:start + chunk])
    splitter.close()
    return parser.report, lines


def test_a_codex_count_of_another_type_drops_that_count_not_the_final_event():
    parser = CodexJsonParser()
    parser.lines(b'{"type":"item.completed","item":{"type":"agent_message","text":"done"}}\n'
                 b'{"type":"turn.completed","usage":{"input_tokens":7,"output_tokens":"12","cached_input_tokens":true}}\n')
    assert parser.report.finished and parser.report.reply == "done"
    assert parser.report.usage.input_tokens == 7 and parser.report.usage.output_tokens is None
    assert parser.report.usage.turns == 1 and parser.report.usage.cached_input_tokens is None


def test_claude_captures():
    report, lines = parse(ClaudeStreamParser, "claude", "tool_bash_default_perms")
    assert report.reply.startswith("Tool finished.") and report.error is None and report.finished
    assert report.usage == Usage(turns=2, input_tokens=22, output_tokens=10, cached_input_tokens=0,
                                 cost_usd=0.000288, cost_source="reported")
    assert lines[0] == "$ echo hello"
    signed_out, _ = parse(ClaudeStreamParser, "claude", "signed_out")
    assert signed_out.error == "Not logged in · Please run /login" and signed_out.error_kind == "signin"
    assert signed_out.reply is None
    refusal, _ = parse(ClaudeStreamParser, "claude", "refusal")
    assert refusal.refusal and refusal.error is None
    unknown, _ = parse(ClaudeStreamParser, "claude", "resume_unknown_uuid")
    assert unknown.error.startswith("No conversation found with session ID") and unknown.error_kind is None
    http, _ = parse(ClaudeStreamParser, "claude", "http_401_max_retries_0")
    assert http.error_kind == "signin"


@pytest.mark.parametrize("name", sorted(p.stem for p in (CAPTURES / "claude").glob("*.jsonl")))
def test_claude_captures_read_to_the_cost_claude_reports(name):
    # The ledger's turns are the distinct assistant messages, its cost the result's own figure.
    events = [json.loads(line) for line in (CAPTURES / "claude" / f"{name}.jsonl").read_text().splitlines()
              if line.strip()]
    result = next((e for e in events if e.get("type") == "result"), None)
    messages = {e["message"]["id"] for e in events if e.get("type") == "assistant"
                and e["message"].get("model") != "<synthetic>"}
    report, _ = parse(ClaudeStreamParser, "claude", name)
    assert report.usage.turns == len(messages)
    if result is None or "total_cost_usd" not in result:
        assert report.usage.cost_usd is None and report.usage.cost_source is None
    else:
        assert report.usage.cost_usd == result["total_cost_usd"] and report.usage.cost_source == "reported"
        assert report.usage.output_tokens == result["usage"]["output_tokens"]


def test_pi_and_codex_turns_and_pi_cost():
    pi = PiJsonParser()
    for cost in (0.25, 0.5):
        pi.line(json.dumps({"type": "message_end", "message": {
            "role": "assistant", "stopReason": "toolUse", "content": [],
            "usage": {"input": 10, "output": 2, "cacheRead": 4, "cost": {"total": cost}}}}).encode())
    assert pi.report.usage == Usage(turns=2, input_tokens=20, output_tokens=4, cached_input_tokens=8,
                                    cost_usd=0.75, cost_source="reported")
    pi.line(b'{"type":"message_end","message":{"role":"assistant","usage":{"input":1,"output":1}}}')
    assert pi.report.usage.turns == 3 and pi.report.usage.cost_usd is None     # a part is unknown
    codex = CodexJsonParser()
    codex.lines(b'{"type":"item.completed","item":{"type":"reasoning","text":"x"}}\n'
                b'{"type":"item.completed","item":{"type":"command_execution","command":"ls","exit_code":0}}\n'
                b'{"type":"item.completed","item":{"type":"error","message":"warn"}}\n'
                b'{"type":"item.completed","item":{"type":"agent_message","text":"done"}}\n')
    assert codex.report.usage.turns == 2 and codex.report.usage.cost_usd is None


def test_codex_captures():
    report, lines = parse(CodexJsonParser, "codex", "tool_default_model")
    assert report.reply.startswith("The command printed") and report.vendor_session.startswith("01a23691")
    assert lines == ["$ /bin/bash -lc 'echo hello'"]
    failed, _ = parse(CodexJsonParser, "codex", "error_err401")
    assert failed.error.startswith("unexpected status 401") and failed.error_kind == "signin"
    model, _ = parse(CodexJsonParser, "codex", "error_unknown_model")
    assert model.error_kind == "model"          # the earlier warning item is not the failure


def test_codex_progress_lines():
    lines = []
    parser = CodexJsonParser(lines.append)
    for event in [
        {"type": "item.completed", "item": {"type": "command_execution", "command": "make test", "exit_code": 2,
                                            "aggregated_output": "SECRET OUTPUT"}},
        {"type": "item.completed", "item": {"type": "file_change",
                                            "changes": [{"path": "/a/b/c/main.py", "kind": "update"}]}},
        {"type": "item.started", "item": {"type": "web_search", "id": "x", "query": "rust 2026"}},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "hmm"}},
        {"type": "brand.new.event", "whatever": [1, 2]},
        {"type": "error", "message": "Reconnecting... 1/5"},
    ]:
        parser.line(json.dumps(event).encode())
    assert lines == ["exit 2: make test", "update /a/b/c/main.py", "search: rust 2026"]
    assert parser.report.error is None
    parser.line(b'{"type":"item.started","item":{"type":"web_search","id":"a","id":"b","query":"dup"}}')
    assert lines[-1] == "search: dup"


def test_pi_captures():
    report, lines = parse(PiJsonParser, "pi", "tool_bash")
    assert report.reply == "The command printed: hello" and lines == ["$ echo hello"]
    error, _ = parse(PiJsonParser, "pi", "error_err401")
    assert error.error.startswith("401 ") and error.error_kind == "signin" and error.reply is None
    signed_out, _ = parse(PiJsonParser, "pi", "pi_print_json_signed_out")
    assert signed_out.vendor_session and signed_out.reply is None and not signed_out.finished


def test_pi_retry_reopens_the_turn():
    parser = PiJsonParser()
    parser.line(b'{"type":"agent_end"}')
    assert parser.report.finished
    parser.line(b'{"type":"auto_retry_start","attempt":1}')
    assert not parser.report.finished


def test_unknown_shapes_and_non_json_are_ignored():
    parser = ClaudeStreamParser()
    for raw in [b"not json", b"[1,2]", b'"text"', b'{"type": 5}', b'{"type":"result","usage":"odd","result":7}']:
        parser.line(raw)
    assert parser.report.other_lines == 1
    assert parser.report.reply is None


def test_line_splitter_skips_oversized_lines_with_bounded_memory():
    seen = []
    splitter = LineSplitter(lambda run: seen.extend(run.split(b"\n")), limit=10)
    splitter.feed(b"short\n" + b"x" * 25)
    assert len(splitter._partial) == 0            # dropped as soon as it passed the limit
    splitter.feed(b"y" * 30 + b"\nafter\r\nlast")
    splitter.close()
    assert seen == [b"short", b"after\r", b"last"] and splitter.skipped == 1


@given(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=20),
       st.integers(min_value=1, max_value=17))
def test_line_splitter_matches_splitlines(lines, chunk):
    data = b"\n".join(lines)
    seen = []
    splitter = LineSplitter(lambda run: seen.extend(line for line in run.split(b"\n") if line.strip()),
                            limit=25)
    for start in range(0, len(data), chunk):
        splitter.feed(data[start:start + chunk])
    splitter.close()
    assert seen == [line for line in lines if line.strip() and len(line) <= 25]


@pytest.mark.parametrize("line, shown", [
    ("$ curl -H 'Authorization: Bearer abc.def' https://api.x.com/v1/a?key=zzz#frag",
     "$ curl -H 'Authorization: Bearer … https://api.x.com/v1/a"),
    ("$ OPENAI_API_KEY=sk-abc123 make deploy --token t0ps3cret", "$ OPENAI_API_KEY=… make deploy --token …"),
    ("Read /home/someone/projects/app/src/main.py", "Read …/src/main.py"),
    ("$ git push https://ghp_abcdefghijkl@github.com/o/r", "$ git push https://…@github.com/o/r"),
    ("$ curl https://me:hunter2@host.example/x?y=1", "$ curl https://…@host.example/x"),
    ("$ export FOO=ghp_abcdefghijkl; curl -H 'X-Key:sk-abc123' x", "$ export FOO=…; curl -H 'X-Key:…' x"),
    ("$ echo ghp_abcdefghijkl xai-123 AKIAABCDEFGH", "$ echo … … …"),
    ("$ mysql --password=hunter2 -u root", "$ mysql --password=… -u root"),
    ("first line\nsecond line with secrets", "first line"),
])
def test_redaction(line, shown):
    assert redact(line) == shown


@given(st.text(max_size=300))
def test_redaction_is_bounded_single_line_and_hides_known_tokens(text):
    out = redact(text + " sk-live123456 PASSWORD=hunter2")
    assert "\n" not in out and len(out) <= 200
    if "\n" not in text and "\r" not in text and len(out) < 199:
        assert "hunter2" not in out and "sk-live123456" not in out


def test_progress_throttle_twice_a_second():
    now = [0.0]
    sent = []
    throttle = AgentProgress(sent.append, clock=lambda: now[0], start_timer=lambda delay, due: lambda: None)
    throttle.offer("$ one")
    throttle.offer("$ two")
    throttle.offer("$ three")
    now[0] = 0.4
    throttle.due()                              # a wake-up a little early sends nothing yet
    assert sent == ["$ one"]
    now[0] = 0.6
    throttle.due()
    assert sent == ["$ one", "$ three"]
    throttle.offer("$ four")
    now[0] = 1.2
    throttle.offer("$ five /very/long/path/to/file.txt")
    assert sent == ["$ one", "$ three", "$ five …/to/file.txt"]


def test_progress_throttle_asks_to_be_woken_for_a_waiting_line():
    now, sent, wakes = [10.0], [], []
    throttle = AgentProgress(sent.append, clock=lambda: now[0],
                             start_timer=lambda delay, due: wakes.append(delay) or (lambda: None))
    throttle.offer("$ one")
    assert sent == ["$ one"] and wakes == []
    now[0] = 10.2
    throttle.offer("$ two")
    assert sent == ["$ one"] and wakes == [pytest.approx(0.3)]
    now[0] = 10.5
    throttle.due()                              # what the run calls when woken
    assert sent == ["$ one", "$ two"]


def test_bound_and_tail_cut_on_character_boundaries():
    assert bound("ab", 10) == ("ab", False)
    assert bound("é" * 10, 5) == ("éé", True)
    tail = Tail(5)
    tail.feed("aéééé".encode())
    assert tail.text() == "éé"


@given(st.text(max_size=200), st.integers(min_value=0, max_value=300))
def test_bound_never_exceeds_and_keeps_a_prefix(text, limit):
    cut, truncated = bound(text, limit)
    assert len(cut.encode("utf-8", "surrogatepass")) <= limit
    assert text.startswith(cut) and truncated == (cut != text)


@given(st.text(max_size=140))
def test_model_grammar(model):
    try:
        check_model(model)
    except RefusedError:
        ok = False
    else:
        ok = True
    import re
    assert ok == bool(re.fullmatch(r"[A-Za-z0-9._:/@\[\]-]{1,128}", model) and model[0] not in "-@")


def test_effort_and_prompt_checks():
    for effort in ("low", "medium", "high", "xhigh", "max"):
        check_effort(effort)
    with pytest.raises(RefusedError):
        check_effort("minimal")
    for prompt in ("-x", "  --help", "", "   ", "a\x00b"):
        with pytest.raises(RefusedError):
            check_prompt(prompt)
    check_prompt("fix the - bug")


def test_conversations_lru_idle_and_markers(tmp_path):
    now = [0.0]
    book = Conversations(2, 100, tmp_path / "markers", clock=lambda: now[0])
    first = book.start("codex")
    book.begin_turn(first)
    assert book.end_turn(first, "thread-a", "/ws")
    assert (tmp_path / "markers" / "thread-a").exists()
    now[0] = 1
    second = book.start("codex")
    book.begin_turn(second)
    assert book.end_turn(second, "thread-b", "/ws") and second.handle == "codex-2"
    now[0] = 2
    book.begin_turn(first)
    book.end_turn(first, None, "/ws")
    third = book.start("claude")               # the least recently used idle one goes: codex-2
    assert third.handle == "claude-1" and len(book) == 2
    with pytest.raises(RefusedError):
        book.get("codex-2")
    assert not (tmp_path / "markers" / "thread-b").exists()
    book.begin_turn(third)
    assert not book.end_turn(third, None, None)    # no session reported: forgotten
    now[0] = 200
    with pytest.raises(RefusedError):
        book.get("codex-1")                    # idle past conversation_idle_seconds
    assert not (tmp_path / "markers" / "thread-a").exists()


def test_a_busy_conversation_is_never_evicted(tmp_path):
    book = Conversations(1, 100, tmp_path / "m", clock=time.monotonic)
    busy = book.start("codex")
    book.begin_turn(busy)
    with pytest.raises(RefusedError) as info:
        book.start("codex")
    assert "running a turn" in str(info.value)
    with pytest.raises(RefusedError) as info:
        book.begin_turn(busy)
    assert str(info.value).startswith("session busy")


def test_a_conversation_before_its_first_turn_is_never_evicted(tmp_path):
    # Another call's start lands between this one's start and its first turn (batch lanes, jobs).
    now = [0.0]
    book = Conversations(2, 100, tmp_path / "m", clock=lambda: now[0])
    done = book.start("codex")
    book.begin_turn(done)
    assert book.end_turn(done, "thread-a", "/ws")
    now[0] = 1
    waiting = book.start("codex")               # NEW, its turn not begun yet
    now[0] = 2
    book.begin_turn(done)
    assert book.end_turn(done, None, "/ws")     # more recently used than `waiting`
    other = book.start("codex")                 # evicts the idle one, not the one about to run
    assert book.knows(waiting.handle) and not book.knows(done.handle)
    book.begin_turn(waiting)
    with pytest.raises(RefusedError) as info:
        book.start("codex")                     # one running, one about to: none can go
    assert "running a turn or about to" in str(info.value)
    now[0] = 500
    book.expire()                               # nor does a NEW one expire
    assert book.knows(other.handle)


def test_a_conversation_reserved_for_a_background_job_is_neither_evicted_nor_expired(tmp_path):
    now = [0.0]
    book = Conversations(2, 100, tmp_path / "m", clock=lambda: now[0])
    first, second = book.start("codex"), book.start("codex")
    for conversation, thread in ((first, "thread-a"), (second, "thread-b")):
        book.begin_turn(conversation)
        assert book.end_turn(conversation, thread, "/ws")
        now[0] += 1
    book.reserve(first)                         # the least recently used, held for its job
    with pytest.raises(RefusedError) as info:
        book.reserve(first)
    assert str(info.value).startswith("session busy")
    book.start("codex")                         # the other idle one goes
    assert book.knows(first.handle) and not book.knows(second.handle)
    now[0] = 500
    book.expire()
    assert book.knows(first.handle) and book.seconds_to_expiry() == 100
    book.begin_turn(first)                      # the job's thread: RESERVED -> BUSY
    assert book.end_turn(first, None, "/ws")
    book.reserve(first)
    book.release(first)                         # the job never started: idle again, from now
    assert first.idle and book.seconds_to_expiry() == 100


def test_the_next_expiry_and_a_turn_of_a_conversation_forgotten_meanwhile(tmp_path):
    now = [0.0]
    book = Conversations(4, 100, tmp_path / "m", clock=lambda: now[0])
    assert book.seconds_to_expiry() == 100          # none idle: nothing is due sooner
    kept = book.start("claude")
    book.begin_turn(kept)
    assert book.seconds_to_expiry() == 100          # a busy one never expires
    assert book.end_turn(kept, "acp-session", "/ws")
    now[0] = 30
    assert book.seconds_to_expiry() == 70
    now[0] = 101
    assert book.seconds_to_expiry() == 0
    book.expire()                                   # what the idle reaper does when it is due
    with pytest.raises(RefusedError) as info:
        book.begin_turn(kept)                       # the call got it before the reaper forgot it
    assert "was forgotten" in str(info.value) and "omit session" in str(info.value)


def test_claude_progress_lines():
    lines = []
    parser = ClaudeStreamParser(lines.append)

    def assistant(*parts):
        parser.line(json.dumps({"type": "assistant", "message": {"content": list(parts)}}).encode())

    assistant({"type": "text", "text": "\nLooking at the tests first.\nThen the fix."},
              {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -q"}})
    assistant({"type": "tool_use", "name": "Edit", "input": {"file_path": "/w/proj/src/app.py"}},
              {"type": "tool_use", "name": "WebSearch", "input": {"query": "msgspec decode_lines"}},
              {"type": "tool_use", "name": "WebFetch", "input": {"url": "https://docs.x.org/a/b?token=1"}},
              {"type": "tool_use", "name": "Grep", "input": {"pattern": "TODO", "path": "src"}},
              {"type": "tool_use", "name": "TodoWrite", "input": {"todos": ["secret plan"]}})
    parser.line(json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "content": "COMMAND OUTPUT"}]}}).encode())
    assert lines == ["Looking at the tests first.", "$ pytest -q", "Edit /w/proj/src/app.py",
                     "search: msgspec decode_lines", "fetch https://docs.x.org/a/b?token=1", "Grep", "TodoWrite"]


def test_pi_progress_lines():
    lines = []
    parser = PiJsonParser(lines.append)
    for event in [
        {"type": "tool_execution_start", "toolName": "bash", "args": {"command": "make"}},
        {"type": "tool_execution_update", "toolName": "bash", "partialResult": "OUTPUT"},
        {"type": "tool_execution_end", "toolName": "bash", "isError": True, "result": {"content": "OUTPUT"}},
        {"type": "tool_execution_start", "toolName": "read", "args": {"path": "src/main.py"}},
        {"type": "tool_execution_start", "toolName": "grep", "args": {"pattern": "password"}},
        {"type": "tool_execution_start", "toolName": "web_lookup", "args": {"q": "x"}},
        {"type": "tool_execution_end", "toolName": "read", "isError": False},
    ]:
        parser.line(json.dumps(event).encode())
    assert lines == ["$ make", "bash failed", "read src/main.py", "grep", "web_lookup"]


@pytest.mark.parametrize("text, kind", [
    # The failure texts the captures' notes record for each CLI: each is an availability failure.
    ("API Error: Request rejected (429) · Rate limited", "quota"),
    ("API Error: 500 Internal server error. Please retry", "http"),
    ("API Error: Repeated 529 Overloaded errors. Try later", "http"),
    ("exceeded retry limit, last status: 429 Too Many Requests", "quota"),
    ("We\u2019re currently experiencing high demand, which may cause temporary errors.", "http"),
    ("stream disconnected before completion: upstream reset", "http"),
    ("Missing environment variable: `FAKE_KEY`.", "signin"),
    ("unexpected status 403 Forbidden: denied, url: http://127.0.0.1/v1/responses", "http"),
    ("404 The model `x-1` does not exist or you do not have access to it.", "model"),
    ("The requested model 'no-such-model' does not exist.", "model"),
    ("server_error: the stream broke", "http"),
    ("You exceeded your current quota, please check your plan", "quota"),
    ("3 tests failed in test_app.py", None),
    ("error: cannot find module foo", None),
])
def test_availability_kinds(text, kind):
    from workers.agents.verdict import classify
    assert classify(text) == kind
