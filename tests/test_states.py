"""Every state machine's table names each of its states, reaches each state it has from its
first one, and refuses a move it lacks, so a move a change adds by mistake fails at once."""

import pytest

from scv.agents.conversations import CONVERSATION_MOVES, ConversationState
from scv.core.states import IllegalMove
from scv.session.session import SESSION_MOVES, SessionState
from scv.session.turn_loop import PHASE_MOVES, Phase
from scv.supervision.live_worker import LIVE_MOVES, LiveState
from scv.supervision.relay import RELAY_MOVES, RelayState

MACHINES = [(CONVERSATION_MOVES, ConversationState, ConversationState.NEW),
            (SESSION_MOVES, SessionState, SessionState.OPEN),
            (PHASE_MOVES, Phase, Phase.IDLE),
            (LIVE_MOVES, LiveState, LiveState.OPEN),
            (RELAY_MOVES, RelayState, RelayState.RUNNING)]


@pytest.mark.parametrize("moves, states, first", MACHINES, ids=lambda m: getattr(m, "__name__", ""))
def test_each_table_covers_its_states_and_reaches_them(moves, states, first):
    assert set(moves.table) == set(states)
    reached, todo = {first}, [first]
    while todo:
        for nxt in moves.table[todo.pop()]:
            if nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    assert reached == set(states)


@pytest.mark.parametrize("moves, states, first", MACHINES, ids=lambda m: getattr(m, "__name__", ""))
def test_a_move_the_table_lacks_is_refused(moves, states, first):
    for current in states:
        for to in states:
            if to in moves.table[current]:
                assert moves.check("it", current, to) is to
            else:
                with pytest.raises(IllegalMove, match=f"it cannot move from {current.value} to {to.value}"):
                    moves.check("it", current, to)
