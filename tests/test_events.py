"""scv/core/events.py: what goes on the wire from each event Struct, and `read_event`'s rule for
reading it back (the nested SCV client's side): omitted fields read as empty, a missing id or a
wrong type is an EventError, an unknown method is not an event."""

import msgspec
import pytest

from scv.core import events as ev


def wire(event: ev.Event) -> bytes:
    return msgspec.json.encode(ev.params_of(event))


@pytest.mark.parametrize("event", [
    ev.TurnStarted(turn_id="turn-1", prompt="go", origin={"kind": "background", "jobs": []}),
    ev.AssistantDelta(turn_id="turn-1", text="he"),
    ev.ToolStarted(turn_id="turn-1", call_id="c1", tool="bash", arguments='{"command":"ls"}', risk=None, summary=None),
    ev.ToolCompleted(turn_id="turn-1", call_id="c1", tool="bash", ok=True, result={"exit_code": 0},
                     jobs=[{"job": "j1", "status": "running"}]),
    ev.ApprovalRequested(turn_id="turn-1", id="approval-1", tool="write", risk="filesystem", summary="s",
                         workspace="/w"),
    ev.TurnFailed(turn_id="turn-1", reason="schema_invalid", error="e", usage={}, errors=[{"path": "$"}], reply="r"),
])
def test_an_event_reads_back_as_itself(event):
    assert ev.read_event(event.__struct_config__.tag, wire(event)) == event


def test_an_omitted_field_reads_as_its_empty_value():
    asked = ev.read_event("approval.requested", b'{"turn_id":"t","id":"a","tool":"w","risk":"r","summary":"s"}')
    assert asked.workspace == ""
    assert ev.read_event("turn.failed", b'{"turn_id":"t"}') == ev.TurnFailed(
        turn_id="t", reason=None, error=None, usage={})
    assert ev.read_event("tool.completed", b'{"turn_id":"t","extra":1}') == ev.ToolCompleted(
        turn_id="t", call_id="", tool="", ok=False, result={})


@pytest.mark.parametrize("method,params,says", [
    ("turn.completed", b'{"reply":"r","usage":{}}', "turn_id"),
    ("approval.requested", b'{"turn_id":"t","tool":"w"}', "`id`"),
    ("tool.progress", b'{"turn_id":"t","line":7}', "line"),
    ("assistant.delta", b"null", "not an object"),
    ("assistant.delta", b"{", "not JSON"),
])
def test_a_missing_id_or_a_wrong_type_is_unreadable(method, params, says):
    with pytest.raises(ev.EventError, match=says):
        ev.read_event(method, params)


def test_a_method_that_is_no_session_event_is_none():
    assert ev.read_event("session.ready", b"{}") is None
