"""The one way SCV's state machines move: each has a table of the moves its lifecycle has, and its
one transition function asks `Moves.check` before it changes state, so a move the table lacks is
a bug that raises at once instead of a state that quietly disagrees with the docs
(docs/architecture.md draws these tables)."""

import enum
from typing import Generic, TypeVar

S = TypeVar("S", bound=enum.Enum)


class IllegalMove(ValueError):
    pass


class Moves(Generic[S]):
    def __init__(self, table: dict[S, set[S]]):
        self.table = {state: frozenset(targets) for state, targets in table.items()}

    def check(self, what: str, current: S, to: S) -> S:
        """`to`, if `what` (say, "conversation codex-1") may move there from `current`."""
        if to not in self.table[current]:
            raise IllegalMove(f"{what} cannot move from {current.value} to {to.value}")
        return to
