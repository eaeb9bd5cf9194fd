"""The choice between a rule's PostgreSQL fast path and its portable reference.

A service never asks which database it runs on: where a use case has a PostgreSQL fast path (a
compiled statement, a PL/pgSQL function, a batched write), the portable reference (the same
rule through the models, for every database) is decorated with its fast path, and the service
calls the one function the decorator returns; the database decides here.

    def _lock_room_pg(room_id): ...            # one statement (PostgreSQL)

    @fast_path(_lock_room_pg)
    def lock_room(room_id): ...                # the reference: the models

Both stay reachable (`lock_room.postgres`, `lock_room.reference`) for the randomized
equivalence tests that run them on the same data (tests/services/test_rule_equivalence.py),
so a fast path cannot drift from its reference; tests/unit/test_fast_paths.py names the test
that proves each pair.

`dialect_variant` dispatches the same way for the few pairs that answer differently by design,
each documenting what its caller does with either answer: an admin list's planner estimate
where the reference counts (capped), ARI events written with the commit where the reference
leaves them to the caller, a check-in's room picked with the stay's read where the reference
leaves the pick to the caller, the allotment guard that PostgreSQL's concurrent writers need
and SQLite's one writer does not. No equivalence test applies to them; their callers' tests
run on both databases.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import peewee

from pms.db.database import db

F = TypeVar("F", bound=Callable[..., Any])


def fast_path(postgres: Callable[..., Any]) -> Callable[[F], F]:
    """Decorate a rule's portable reference with its PostgreSQL fast path (same arguments,
    same answer): the function returned runs `postgres` on PostgreSQL, the reference
    elsewhere."""

    def decorate(reference: F) -> F:
        @functools.wraps(reference)
        def chosen(*args: Any, **kwargs: Any) -> Any:
            if isinstance(db.obj, peewee.PostgresqlDatabase):
                return postgres(*args, **kwargs)
            return reference(*args, **kwargs)

        chosen.postgres = postgres  # type: ignore[attr-defined]
        chosen.reference = reference  # type: ignore[attr-defined]
        return chosen  # type: ignore[return-value]

    return decorate


def dialect_variant(postgres: Callable[..., Any]) -> Callable[[F], F]:
    """As `fast_path`, for a PostgreSQL variant that answers differently from the portable
    function by design (the caller handles both answers): not a fast path of the same rule,
    so no equivalence test holds it to the portable answer."""
    return fast_path(postgres)
