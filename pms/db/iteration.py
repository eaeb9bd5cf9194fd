"""The connection of one iteration of a long-running loop.

A long-running process (the relay's sweeps, the platform consumer's messages) must own its
connection per iteration: connect at the start of a sweep or message, close at its end, so a
connection the server dropped (a restart, a failover, `pg_terminate_backend`) is dropped with
the iteration and the next one connects afresh. A scope nested in an outer one (e.g. a CLI
command's) neither opens nor closes anything: the loop would keep a dead connection forever.
`iteration_scope()` is `connection_scope()` that refuses to be nested.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pms.db.database import connection_scope, db


class NestedIterationScope(RuntimeError):
    """A loop's iteration ran inside an outer connection scope, which would own its connection."""


def scope_depth() -> int:
    """How many connection scopes this thread is in (0: none)."""
    target = db.obj
    state = getattr(target, "_scope", None)
    return int(getattr(state, "depth", 0) or 0)


@contextmanager
def iteration_scope() -> Iterator[None]:
    """One iteration's own connection scope (see module docstring)."""
    if scope_depth():
        raise NestedIterationScope(
            "a long-running loop's iteration must own its connection: leave the outer "
            "connection scope first (cli.output.leave_command_scope)")
    with connection_scope():
        yield


__all__ = ["NestedIterationScope", "iteration_scope", "scope_depth"]
