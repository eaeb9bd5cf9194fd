"""A table-driven state machine: the only way a status changes (STYLE §F).

`Machine.transition(current, trigger)` returns the new state or raises the machine's error (or a
more specific one the caller passes) for a move that is not in the table. Idempotent
self-transitions are listed explicitly in the tables; callers detect `new == current`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Generic, TypeVar

from pms.errors import InvalidTransition, PmsError

S = TypeVar("S", bound=Enum)


class Machine(Generic[S]):
    def __init__(self, states: type[S], table: Mapping[tuple[S, str], S], *,
                 error: type[PmsError] = InvalidTransition, name: str | None = None) -> None:
        self.states = states
        self.table = dict(table)
        self.error = error
        self.name = name or states.__name__

    def transition(self, current: S | str, trigger: str, *,
                   error: type[PmsError] | None = None) -> S:
        state = self.states(current)
        try:
            return self.table[(state, trigger)]
        except KeyError:
            exc = error or self.error
            raise exc(f"cannot {trigger.replace('_', ' ')} from {state.value}",
                      current_status=state.value, trigger=trigger) from None

    def can(self, current: S | str, trigger: str) -> bool:
        return (self.states(current), trigger) in self.table

    def triggers(self) -> set[str]:
        return {trigger for _, trigger in self.table}
