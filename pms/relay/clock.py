"""The relay's clock is the database's: leases (`lease_until`, partition and node
`expires_at`), `next_attempt_at`, `dispatch_next_at` and every other time one host writes and
another compares are read from PostgreSQL's clock, never from the host's, whose wall clock may
be off by milliseconds or minutes from its neighbours'.

`database_now()` asks the server (`clock_timestamp()`, one round trip). `DbClock` is the
long-running relay's clock: the server's time read at most every `resync_s` seconds and carried
forward between reads by the host's *monotonic* clock (which a wall-clock step or a skewed host
time never moves), so a relay sweep costs no extra round trip per batch. SQLite (the embedded
single-host database) has no server: its clock is the host's.

New rows are due by the database's clock too: on PostgreSQL the outbox's insert function takes
`LEAST(next_attempt_at, now())` (migration 021), so a writer whose clock runs ahead does not
delay its events.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from pms.db.database import db, is_postgres
from pms.db.fields import utcnow
from pms.db.scope import tenant_free

RESYNC_S = 10.0


def database_now() -> datetime:
    """The database server's current time (the host's for SQLite)."""
    if not is_postgres():
        return utcnow()
    with tenant_free():
        value = db.execute_sql("SELECT clock_timestamp()").fetchone()[0]
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


class DbClock:
    """The database's time, read every `resync_s` and advanced by the monotonic clock between
    reads (see module docstring). Callable like `utcnow`."""

    def __init__(self, *, resync_s: float = RESYNC_S) -> None:
        self.resync_s = resync_s
        self._base: datetime | None = None
        self._read_at = 0.0

    def __call__(self) -> datetime:
        elapsed = time.monotonic() - self._read_at
        if self._base is None or elapsed >= self.resync_s:
            before = time.monotonic()
            self._base = database_now()
            # the server read its clock somewhere in the round trip: take its middle
            self._read_at = (before + time.monotonic()) / 2
            return self._base
        return self._base + timedelta(seconds=elapsed)


__all__ = ["DbClock", "database_now"]
