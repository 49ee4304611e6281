"""The relay's states and deadlines, driven by an in-memory channel and a fake clock: every
timing rule checked exactly, without processes or wall time."""

from scv.core import stopping
from scv.core.messages import ApprovalAnswer, ApprovalRequest, Cancel, Progress, Result
from scv.supervision.relay import BACKSTOP_SECONDS, EXIT_WAIT_SECONDS, Relay, RelayState
from scv.supervision.worker_channel import Closed, Garbled, Message, Stderr
from tests.channel_fakes import FakeChannel, FakeClock

DONE = Result(ok=True, value={"n": 1})


def relay(script, timeout=30.0, cancel_at=None, **kw):
    clock = FakeClock()
    channel = FakeChannel(clock, script, cancel_at=cancel_at, listening=cancel_at is not None)
    kills = []
    machine = Relay(channel=channel, timeout_seconds=timeout, clock=clock, kill=lambda: kills.append(clock.now),
                    cancel_message=Cancel(id="call-1"), **kw)
    return machine, channel, clock, kills


def test_a_result_ends_the_relay_at_once():
    machine, channel, clock, kills = relay([(1.0, Message(Progress(line="a"))), (2.0, Message(DONE))],
                                           on_progress=lambda line: None)
    end = machine.run()
    assert end.result == DONE and end.problem is None
    assert machine.state is RelayState.DONE and clock.now == 2.0 and kills == []


def test_progress_lines_are_relayed_in_order():
    lines = []
    machine, *_ = relay([(0.1, Message(Progress(line="one"))), (0.1, Message(Progress(line="two"))),
                         (0.2, Message(DONE))], on_progress=lines.append)
    machine.run()
    assert lines == ["one", "two"]


def test_an_approval_request_is_answered_on_the_channel():
    ask = ApprovalRequest(id="ask-1", tool="bash", risk="process", summary="rm")
    machine, channel, *_ = relay([(0.5, Message(ask)), (1.0, Message(DONE))], on_approval=lambda a: a.id == "ask-1")
    machine.run()
    assert channel.sent == [ApprovalAnswer(id="ask-1", approved=True)]


def test_an_approval_request_without_a_gate_is_denied():
    ask = ApprovalRequest(id="ask-2", tool="bash", risk="process", summary="rm")
    machine, channel, *_ = relay([(0.5, Message(ask)), (1.0, Message(DONE))])
    machine.run()
    assert channel.sent == [ApprovalAnswer(id="ask-2", approved=False)]


def test_a_request_denied_because_the_call_was_cancelled_reaches_the_worker_after_the_cancel():
    # The worker then answers its agent "cancelled" (an ACP permission request), not "rejected".
    ask = ApprovalRequest(id="ask-3", tool="agent", risk="filesystem", summary="[claude-1 acp] edit a (edit)")

    def cancelled_while_waiting(request):
        clock.now = 2.0         # the person was still deciding when the cancel came at 1.0
        return False
    machine, channel, clock, _ = relay([(0.5, Message(ask)), (3.0, Message(DONE))], cancel_at=1.0,
                                       on_approval=cancelled_while_waiting)
    machine.run()
    assert channel.sent == [Cancel(id="call-1"), ApprovalAnswer(id="ask-3", approved=False)]


def test_a_worker_past_its_timeout_and_backstop_is_killed_then_waited_for():
    machine, channel, clock, kills = relay([], timeout=30.0)
    end = machine.run()
    assert kills == [30.0 + BACKSTOP_SECONDS]
    assert end.result is None and end.problem == "did not finish after its deadline and was killed"
    # KILLED waits for the dead worker's pipes at most EXIT_WAIT_SECONDS, then gives up.
    assert clock.now == 30.0 + BACKSTOP_SECONDS + EXIT_WAIT_SECONDS


def test_a_killed_worker_whose_pipe_closes_ends_the_relay_then():
    machine, channel, clock, kills = relay([(40.5, Closed("out"))], timeout=30.0)
    end = machine.run()
    assert kills == [40.0] and clock.now == 40.5 and machine.state is RelayState.DONE
    assert end.problem.startswith("did not finish")


def test_a_cancel_sends_cancel_and_the_worker_ends_the_call_within_the_bound():
    machine, channel, clock, kills = relay([(1.5, Message(Result(ok=True, value={"cancelled": True})))],
                                           timeout=3600, cancel_at=1.0)
    end = machine.run()
    assert channel.sent == [Cancel(id="call-1")]
    assert end.result.value == {"cancelled": True} and kills == []


def test_a_cancelled_worker_that_ignores_it_is_killed_at_the_cancel_bound_not_the_backstop():
    machine, channel, clock, kills = relay([], timeout=3600, cancel_at=2.0)
    end = machine.run()
    assert kills == [2.0 + stopping.CANCEL_BOUND_SECONDS]
    assert end.problem == (f"did not stop within {stopping.CANCEL_BOUND_SECONDS:g} s of being cancelled and was "
                           "killed")


def test_a_cancel_near_the_deadline_keeps_the_earlier_deadline():
    machine, channel, clock, kills = relay([], timeout=1.0, cancel_at=10.0)
    machine.run()
    assert kills == [1.0 + BACKSTOP_SECONDS]


def test_a_garbled_frame_fails_the_call_and_kills_the_worker():
    machine, channel, clock, kills = relay([(0.2, Garbled("a frame announced 99 bytes")), (0.3, Message(DONE)),
                                            (0.4, Closed("out"))])
    end = machine.run()
    assert kills == [0.2] and end.result is None
    assert end.problem == "broke the message protocol (a frame announced 99 bytes)"


def test_a_worker_that_exits_without_a_result_has_its_stderr_read_to_the_end():
    machine, channel, clock, kills = relay([(0.1, Stderr(b"Traceback: boom\n")), (0.2, Closed("out")),
                                            (0.3, Stderr(b"last words\n")), (0.4, Closed("err"))])
    end = machine.run()
    assert end.result is None and end.problem is None and kills == []
    assert end.stderr_tail == "Traceback: boom\nlast words"
    assert clock.now == 0.4


def test_the_stderr_tail_keeps_the_last_two_kilobytes():
    machine, *_ = relay([(0.1, Stderr(b"x" * 5000 + b"END")), (0.2, Closed("out")), (0.2, Closed("err"))])
    end = machine.run()
    assert len(end.stderr_tail) == 2048 and end.stderr_tail.endswith("END")
