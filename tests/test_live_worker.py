"""The live worker seam through real processes: one worker serves every call of a conversation,
cancellation ends one call and keeps the worker, closing stops what it started, and a worker
whose agent ends itself between calls is found gone."""

import os

import pytest

from scv.core.cancellation import Cancellation
from scv.core.errors import WorkerLost
from scv.core.messages import Call
from scv.core.oscalls import REAL, is_running
from scv.supervision.live_worker import LiveState, LiveWorker
from tests.fakes import wait_for as wait_until


def live_call(worker: LiveWorker, args: dict, n: int, timeout: float = 30.0) -> Call:
    return Call(tool="agent", executor="tests.live_echo:start", args=args, workspace="/", handle=worker.handle,
                timeout_seconds=timeout, output_limit_bytes=65536, options={"memory_mb": 256}, id=f"t-{n}")


@pytest.fixture
def live(supervisor):
    worker = LiveWorker(supervisor, 256 << 20)
    yield worker
    worker.close()


def test_every_call_of_a_conversation_reaches_the_same_worker(live):
    first = live.call(live_call(live, {"text": "a"}, 1))
    second = live.call(live_call(live, {"text": "b"}, 2))
    assert first.ok and second.ok
    assert (first.value["turn"], second.value["turn"]) == (1, 2)
    assert first.value["pid"] == second.value["pid"] == live.pid
    assert second.value["echo"] == "b"


def test_a_failed_call_keeps_the_conversation(live):
    assert not live.call(live_call(live, {"fail": True}, 1)).ok
    again = live.call(live_call(live, {}, 2))
    assert again.ok and again.value["turn"] == 2


def test_a_cancelled_call_ends_and_the_next_call_runs_on_the_same_worker(live):
    cancel = Cancellation()
    result = live.call(live_call(live, {"wait_for_cancel": True}, 1, timeout=3600), cancel=cancel,
                       on_progress=lambda line: cancel.cancel())
    cancel.close()
    assert result.ok and result.value["cancelled"]
    after = live.call(live_call(live, {}, 2))
    assert after.ok and after.value["turn"] == 2 and after.value["pid"] == result.value.get("pid", live.pid)


def test_closing_the_conversation_stops_the_worker_and_what_its_agent_started(supervisor):
    worker = LiveWorker(supervisor, 256 << 20)
    result = worker.call(live_call(worker, {"child": True}, 1))
    child, pid = result.value["child"], worker.pid
    assert is_running(child) and is_running(pid)
    worker.close()
    assert worker.state is LiveState.CLOSED
    wait_until(lambda: not is_running(child) and not is_running(pid))
    assert REAL.tagged(worker.handle) == []
    worker.close()      # twice is fine


def test_an_agent_that_ends_between_calls_leaves_the_worker_gone(live):
    assert live.call(live_call(live, {"end_after": True}, 1)).ok
    wait_until(lambda: not live.alive())
    assert live.state is LiveState.GONE
    with pytest.raises(WorkerLost):
        live.call(live_call(live, {}, 2))


def test_a_late_cancel_of_an_ended_call_does_not_cancel_the_next(live):
    assert live.call(live_call(live, {}, 1)).ok
    # A Cancel for call t-1 that crossed its result on the way arrives before call t-2.
    from scv.core.messages import Cancel
    live._channel.send(Cancel(id="t-1"))
    cancel = Cancellation()
    result = live.call(live_call(live, {}, 2), cancel=cancel)
    cancel.close()
    assert result.ok and "cancelled" not in result.value


def test_the_worker_is_a_process_of_its_own_that_exits_when_closed(supervisor):
    worker = LiveWorker(supervisor, 256 << 20)
    assert worker.call(live_call(worker, {}, 1)).ok
    pid = worker.pid
    assert pid != os.getpid() and is_running(pid)
    worker.close()
    wait_until(lambda: not is_running(pid))
