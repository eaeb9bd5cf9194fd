"""Hot standbys for reads, with read-your-writes (GitLab's database load balancing).

- **Where a caller's writes are remembered**: the table `read_mark` on the primary (migration
  036, UNLOGGED: no WAL, nothing replicated), one row per caller (env, `sub`): the primary's WAL
  insert position read right AFTER the caller's write request committed, and until when it
  counts (30 s). Every host asks the primary, so no in-process state decides anything; the
  row is written with `synchronous_commit = off` (bookkeeping, see
  PmsPostgresDatabase.commit_without_waiting) and never moves backwards (GREATEST).
- **When a replica may serve a read**: it has replayed past the caller's mark
  (`pg_last_wal_replay_lsn() >= mark`; no live mark: any position), and it is not lagging past
  the bound: within `max_lag_bytes` of the primary's WAL position, or its last replayed commit
  no older than `max_lag_s` (GitLab's two tests: bytes for an idle primary, time for a busy
  one). A server that is not a standby (`pg_last_wal_replay_lsn()` NULL) never serves.
- **A replica that fails** (cannot connect, connection lost, query cancelled by replay) is
  skipped for `down_for_s` seconds by this process (a health hint, not a source of truth) and
  the read goes to the primary.

Everything is transaction-scoped (PgBouncer transaction mode): the two checks are plain
statements, the mark one implicit transaction.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import peewee

from pms.db.database import PmsPostgresDatabase, make_database
from pms.db.scope import tenant_free, tenant_scope

log = logging.getLogger("pms.db.replicas")

MARK_SECONDS = 30  # GitLab's sticking window [ref]: a write is remembered this long at most

MARK_SQL = (
    "SET LOCAL synchronous_commit = off; "
    "INSERT INTO read_mark (env_id, sub, lsn, until) "
    "VALUES (%s, %s, pg_current_wal_insert_lsn(), "
    f"clock_timestamp() + interval '{MARK_SECONDS} seconds') "
    "ON CONFLICT (env_id, sub) DO UPDATE "
    "SET lsn = GREATEST(read_mark.lsn, EXCLUDED.lsn), until = EXCLUDED.until")

# the primary's position now, and the caller's live mark (NULL: none)
LOOKUP_SQL = ("SELECT pg_current_wal_lsn()::text, (SELECT lsn::text FROM read_mark "
              "WHERE env_id = %s AND sub = %s AND until > clock_timestamp())")

# on a standby: replayed past the mark? bytes behind the primary, seconds since the last
# replayed commit (NULL replay position: not a standby)
CHECK_SQL = ("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn, "
             "pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()), "
             "extract(epoch FROM now() - pg_last_xact_replay_timestamp())")

NO_MARK = "0/0"


@dataclass(eq=False)
class Replica:
    url: str
    database: PmsPostgresDatabase
    down_until: float = 0.0


@dataclass
class ReadStats:
    """What the routing decided, counted per process (tests and the bench read it)."""

    replica: int = 0
    primary: int = 0  # a replica-eligible read served by the primary (mark, lag, down)
    fell_back: int = 0  # a read begun on a replica and finished on the primary
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {"replica": self.replica, "primary": self.primary, "fell_back": self.fell_back}


class ReplicaSet:
    """The configured hot standbys of one process, tried round robin."""

    def __init__(self, urls: tuple[str, ...] | list[str], *, pool_size: int = 8,
                 statement_timeout_ms: int = 5000, max_lag_s: float = 30.0,
                 max_lag_bytes: int = 16 * 1024 * 1024, down_for_s: float = 5.0) -> None:
        self.replicas = [Replica(url, self._database(url, pool_size, statement_timeout_ms))
                         for url in urls]
        self.max_lag_s = max_lag_s
        self.max_lag_bytes = max_lag_bytes
        self.down_for_s = down_for_s
        self.stats = ReadStats()
        self._next = 0
        self._lock = threading.Lock()

    @staticmethod
    def _database(url: str, pool_size: int, statement_timeout_ms: int) -> PmsPostgresDatabase:
        database = make_database(url, pool_size=pool_size, statement_timeout_ms=statement_timeout_ms)
        if not isinstance(database, PmsPostgresDatabase):
            raise ValueError("a replica must be a PostgreSQL hot standby")
        database.connect_params["connect_timeout"] = 1  # a dead standby must not hold a read up
        return database

    def candidates(self) -> list[Replica]:
        """The replicas not marked down, starting from the next in turn."""
        now = time.monotonic()
        with self._lock:
            start = self._next
            self._next = (self._next + 1) % max(len(self.replicas), 1)
        ordered = self.replicas[start:] + self.replicas[:start]
        return [r for r in ordered if r.down_until <= now]

    def mark_down(self, replica: Replica, exc: BaseException | None = None) -> None:
        replica.down_until = time.monotonic() + self.down_for_s
        log.warning("replica %s skipped for %.0f s: %s", _where(replica.url), self.down_for_s,
                    type(exc).__name__ if exc is not None else "lagging")

    def usable(self, replica: Replica, mark: str | None, primary_lsn: str) -> bool:
        """Whether `replica` (its connection scope entered by the caller) may serve a read
        that must see `mark`. Raises the driver's error when the replica cannot answer."""
        with tenant_free():
            row = replica.database.execute_sql(
                CHECK_SQL, (mark or NO_MARK, primary_lsn)).fetchone()
        caught_up, behind_bytes, behind_s = row
        if not caught_up:  # NULL (not a standby) or behind the caller's write
            return False
        if behind_bytes is not None and behind_bytes <= self.max_lag_bytes:
            return True
        return behind_s is not None and float(behind_s) <= self.max_lag_s

    def close_all(self) -> None:
        for replica in self.replicas:
            try:
                replica.database.close_all()
            except Exception:  # noqa: BLE001 - shutting down
                log.debug("closing replica pool", exc_info=True)


def caller_mark(primary: Any, env_id: uuid.UUID, sub: str) -> tuple[str, str | None]:
    """(the primary's WAL position now, the caller's live mark or None), in one statement."""
    with tenant_scope(env_id):
        row = primary.execute_sql(LOOKUP_SQL, (str(env_id), sub)).fetchone()
    return row[0], row[1]


def remember_write(primary: Any, env_id: uuid.UUID, sub: str) -> None:
    """Record the caller's write position (call after its transactions committed). A failure is
    logged, not raised: the answer to the write stands."""
    try:
        with tenant_scope(env_id):
            primary.execute_sql(MARK_SQL, (str(env_id), sub))
    except peewee.PeeweeException as exc:
        log.warning("the caller's read mark was not written: %s", type(exc).__name__)


def _where(url: str) -> str:
    """host:port/db of a URL, without credentials (for logs)."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return f"{parsed.hostname}:{parsed.port or 5432}{parsed.path}"
