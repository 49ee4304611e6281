"""The session and turn loop in process, with the in-memory fake provider and a real supervisor:
server-started turns with an origin, progress throttling, prompt sections, history pairing."""

import threading

import msgspec
import pytest

from scv.agents.offered import OfferedAgent
from scv.agents.session import open_agent_session
from scv.config.load import load_config, scv_home
from scv.core.agents.descriptors import DESCRIPTORS
from scv.core.cancellation import Cancellation
from scv.core.messages import Result
from scv.core.progress import ProgressThrottle
from scv.providers.base import AssistantMessage, ModelReply, ToolCall, ToolOutput, UserMessage
from scv.providers.fake import FakeProvider
from scv.session.session import Session
from scv.tools.base import ToolContext
from tests.fakes import wait_for
from tests.progress_tool import ProgressTool


def make_session(supervisor, workspace, replies, **kw):
    seen: list[tuple[str, dict]] = []
    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    session = Session(supervisor, ctx, FakeProvider(replies), emit=lambda n, p: seen.append((n, p)), **kw)
    return session, seen


def test_a_queued_turn_carries_its_origin(supervisor, workspace):
    session, seen = make_session(supervisor, workspace, [ModelReply(text="first"), ModelReply(text="report seen")])
    woken = []
    session.on_queued = lambda: woken.append(True)
    assert session.run_turn("hello", cancel=Cancellation()).reply == "first"
    assert not session.held()
    origin = {"kind": "background", "jobs": ["job-1"]}
    session.queue_turn("[SCV background report] job-1 finished", origin)
    assert woken and session.held()
    queued = session.next_queued()
    outcome = session.run_turn(queued.prompt, cancel=Cancellation(), origin=queued.origin)
    assert outcome.status == "completed" and outcome.turn_id == "turn-2"
    started = [p for n, p in seen if n == "turn.started"]
    completed = [p for n, p in seen if n == "turn.completed"]
    assert "origin" not in started[0] and "origin" not in completed[0]
    assert started[1]["origin"] == origin and completed[1]["origin"] == origin
    assert [type(i) for i in session.history] == [UserMessage, AssistantMessage, UserMessage, AssistantMessage]


def test_a_queued_turn_or_outstanding_jobs_keep_a_one_shot_client_open(supervisor, workspace):
    agents = open_agent_session(load_config(workspace), scv_home())
    agents.offered["codex"] = OfferedAgent(DESCRIPTORS["codex"], "/bin/false")    # a job table needs an agent
    session, _ = make_session(supervisor, workspace, [], agents=agents)
    assert not session.held()
    session.queue_turn("report", {"kind": "test"})
    assert session.held()
    assert session.next_queued().prompt == "report" and not session.held()
    gate = threading.Event()

    def run(cancel, on_progress, on_approval):
        gate.wait(20)
        return Result(ok=True, value={"agent": "codex", "status": "completed", "reply": "r"})

    job = session.jobs.start("codex", None, run)
    assert session.held()           # running
    gate.set()
    wait_for(lambda: not job.running)
    assert session.held()           # finished, its report turn queued and unseen
    session.next_queued()
    assert not session.held()
    session.close()
    session.close()
    assert session.closed and session.jobs.closed and session.agents.conversations.closed


def test_progress_is_throttled_and_never_in_history(supervisor, workspace):
    session, seen = make_session(supervisor, workspace, [
        ModelReply(tool_calls=(ToolCall(id="c1", name="chatter", arguments='{"lines": 40, "gap_seconds": 0.025}'),)),
        ModelReply(text="done")])
    session.registry.register(ProgressTool())
    outcome = session.run_turn("talk", cancel=Cancellation())
    assert outcome.status == "completed"
    lines = [p["line"] for n, p in seen if n == "tool.progress"]
    # 40 lines over about a second: at most two a second get through, and the last one is kept.
    assert 1 <= len(lines) <= 6, lines
    assert lines[-1] == "line 39"
    assert all(p["call_id"] == "c1" for n, p in seen if n == "tool.progress")
    history_text = msgspec.json.encode(session.history).decode()
    assert "line 1" not in history_text


def test_tool_sections_join_the_system_prompt(supervisor, workspace):
    session, _ = make_session(supervisor, workspace, [], base_prompt="Base.")
    assert session.system_prompt.startswith("Base.")
    from scv.session.prompt import system_prompt
    text = system_prompt(None, [ProgressTool()], session.ctx)
    assert "## Chatter" in text and "SCV" in text


def test_cancelled_turn_keeps_every_call_paired_with_an_output(supervisor, workspace):
    cancel = Cancellation()

    def calls_then_cancel(request):
        cancel.cancel()
        return ModelReply(tool_calls=(ToolCall(id="a", name="read", arguments='{"path": "x"}'),
                                      ToolCall(id="b", name="read", arguments='{"path": "y"}')))
    session, seen = make_session(supervisor, workspace, [calls_then_cancel])
    outcome = session.run_turn("go", cancel=cancel)
    assert outcome.status == "cancelled"
    outputs = [i for i in session.history if isinstance(i, ToolOutput)]
    assert [o.call_id for o in outputs] == ["a", "b"]
    assert all("cancelled" in o.output for o in outputs)
    assert seen[-1][0] == "turn.failed" and seen[-1][1]["reason"] == "cancelled"


def test_provider_error_fails_the_turn_with_its_sentence(supervisor, workspace):
    from scv.providers.base import ProviderError
    session, seen = make_session(supervisor, workspace, [ProviderError("provider fake broke")])
    outcome = session.run_turn("go", cancel=Cancellation())
    assert outcome.status == "failed" and outcome.reason == "provider"
    assert seen[-1] == ("turn.failed", {"turn_id": "turn-1", "reason": "provider", "error": "provider fake broke",
                                        "usage": {"turns": 0, "input_tokens": None, "cached_input_tokens": None,
                                                  "output_tokens": None, "cost_usd": None, "cost_source": None,
                                                  "total_tokens": None}})


def test_an_internal_error_fails_only_its_turn(supervisor, workspace, capsys):
    session, seen = make_session(supervisor, workspace, [KeyError("surprise"), ModelReply(text="still here")])
    outcome = session.run_turn("go", cancel=Cancellation())
    assert outcome.status == "failed" and outcome.reason == "internal"
    name, params = seen[-1]
    assert name == "turn.failed" and params["reason"] == "internal"
    assert params["error"].startswith("SCV failed with an internal error (KeyError: 'surprise');")
    assert "Traceback" in capsys.readouterr().err
    # The session is not broken: the next turn runs and replies.
    assert session.run_turn("again", cancel=Cancellation()).reply == "still here"


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class FakeTimers:
    """Records the timers a throttle starts; the test fires them."""

    def __init__(self):
        self.started: list[tuple[float, object]] = []
        self.cancelled = 0

    def __call__(self, delay, due):
        self.started.append((delay, due))
        return self._cancel

    def _cancel(self):
        self.cancelled += 1

    def fire(self):
        delay, due = self.started.pop(0)
        due()
        return delay


def throttled() -> tuple[list[str], FakeClock, FakeTimers, ProgressThrottle]:
    """A throttle on a fake clock and fake timers, and the lines it sent."""
    sent: list[str] = []
    clock, timers = FakeClock(), FakeTimers()
    return sent, clock, timers, ProgressThrottle(sent.append, clock=clock, start_timer=timers)


def test_progress_throttle_window():
    sent, clock, timers, throttle = throttled()
    throttle.offer("a")
    clock.now += 0.1
    throttle.offer("b")
    clock.now += 0.1
    throttle.offer("c")
    assert sent == ["a"] and len(timers.started) == 1     # one timer for the held line
    assert timers.started[0][0] == pytest.approx(0.4)
    clock.now += 0.4
    throttle.offer("d")
    assert sent == ["a", "d"]
    assert timers.fire() == pytest.approx(0.4) and sent == ["a", "d"]     # nothing held any more
    clock.now += 0.1
    throttle.offer("e")
    throttle.finish()
    throttle.finish()
    assert sent == ["a", "d", "e"] and timers.cancelled == 1


def test_a_held_line_goes_out_when_the_window_passes():
    sent, clock, timers, throttle = throttled()
    throttle.offer("started")
    clock.now += 0.2
    throttle.offer("working")       # held; the tool then goes quiet
    clock.now += 0.25
    timers.fire()                   # a timer that fires early waits for the rest of the window
    assert sent == ["started"] and timers.started[0][0] == pytest.approx(0.05)
    clock.now += 0.05
    timers.fire()
    assert sent == ["started", "working"]
    clock.now += 0.1
    throttle.offer("again")         # within the window of "working": held again
    assert sent == ["started", "working"]
    throttle.finish()
    assert sent == ["started", "working", "again"]


def test_a_quiet_tool_does_not_hide_its_latest_progress(supervisor, workspace, tmp_path):
    """Real worker and timer: the held line reaches the client while the tool still runs."""
    seen_flag = tmp_path / "line-1-seen"
    replies = [ModelReply(tool_calls=(ToolCall(id="c1", name="chatter", arguments=msgspec.json.encode(
        {"lines": 2, "gap_seconds": 0.0, "wait_for_file": str(seen_flag)}).decode()),)), ModelReply(text="done")]
    seen: list[tuple[str, dict]] = []

    def emit(name, params):
        seen.append((name, params))
        if name == "tool.progress" and params["line"] == "line 1":
            seen_flag.touch()

    ctx = ToolContext(workspace=workspace, config=load_config(workspace))
    session = Session(supervisor, ctx, FakeProvider(replies), emit=emit)
    session.registry.register(ProgressTool())
    assert session.run_turn("talk", cancel=Cancellation()).status == "completed"
    completed = next(p for n, p in seen if n == "tool.completed")
    assert completed["result"] == {"sent": 2, "file_appeared": True}
    assert [p["line"] for n, p in seen if n == "tool.progress"] == ["line 0", "line 1"]


@pytest.mark.parametrize("policy, answer, expected", [("on-risk", True, True), ("on-risk", False, False),
                                                      ("never", True, False)])
def test_relayed_approval_follows_policy_and_client(supervisor, workspace, scv_home, policy, answer, expected):
    from scv.core.messages import ApprovalRequest
    from scv.session.turn_loop import Phase, _tool_call
    from scv.telemetry.spans import NO_SPAN
    (scv_home / "config.toml").write_text(f'[tools]\napproval_policy = "{policy}"\n')
    asked = []

    def asker(request_id, tool, risk, summary, cancel):
        asked.append((tool, risk.value, summary))
        return answer
    session, _ = make_session(supervisor, workspace, [], asker=asker)
    relayed = []
    original = session.runner.run

    def run(prepared, **kw):
        relayed.append(kw["on_approval"](ApprovalRequest(id="n1", tool="bash", risk="process", summary="nested")))
        return original(prepared, **kw)
    session.runner.run = run
    (workspace / "x").write_text("x")
    session.phase = Phase.MODEL     # where the turn's loop calls _tool_call: the model asked for it
    _tool_call(session, "turn-1", ToolCall(id="c", name="read", arguments='{"path": "x"}'), Cancellation(), NO_SPAN)
    assert relayed == [expected]
    assert asked == ([("bash", "process", "nested")] if policy == "on-risk" else [])


def test_a_session_that_offers_no_agent_keeps_no_job_table_and_makes_its_conversations_on_demand(supervisor,
                                                                                                   workspace):
    agents = open_agent_session(load_config(workspace), scv_home())
    agents.offered.clear()
    session, _ = make_session(supervisor, workspace, [], agents=agents)
    assert session.jobs is None and agents.made is None
    assert not {"agent", "agent_wait", "agent_status", "agent_cancel"} & set(session.registry.names())
    session.close()
    assert agents.conversations.closed      # made after the end: closed at once, so nothing can start in it
