"""The database handle: a `DatabaseProxy` bound at start-up by `init_db(url)`.

PostgreSQL runs pooled, with a statement timeout, and every transaction it begins carries the
active tenant in `app.env_id` (set with `set_config(..., true)` in the same round trip as BEGIN),
which the row-level-security policies read. SQLite runs in WAL mode with foreign keys on.
"""

from __future__ import annotations

import re
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

import msgspec
import peewee
from playhouse.pool import PooledPostgresqlDatabase
from psycopg2.extensions import TRANSACTION_STATUS_IDLE
from psycopg2.extras import register_default_jsonb

from pms.config import sqlite_path
from pms.db.scope import current_env, is_unscoped

db: peewee.DatabaseProxy = peewee.DatabaseProxy()

SQLITE_PRAGMAS = (
    ("journal_mode", "wal"),
    ("foreign_keys", 1),
    ("synchronous", "normal"),
    ("busy_timeout", 10000),
)


# Every write transaction waits at most this long for a row lock, then fails (503 Busy with
# Retry-After) instead of queueing: below the 5 s statement timeout.
DEFAULT_LOCK_TIMEOUT_MS = 4000


class PmsPostgresDatabase(PooledPostgresqlDatabase):
    """Pooled PostgreSQL whose every transaction is bound to the active tenant scope."""

    field_types = {**PooledPostgresqlDatabase.field_types, "JSON": "JSONB", "TIMESTAMPTZ": "TIMESTAMPTZ"}

    # PERF: the pool pings (`SELECT 1`, one round trip) every connection it hands out, and the
    # request middleware hands the connection back after every request, so a cheap GET paid a
    # fourth round trip. A connection checked back in idle moments ago is trusted without the
    # ping; one idle longer than PING_AFTER_IDLE_S (or not idle) still gets peewee's full check.
    PING_AFTER_IDLE_S = 2.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._returned_at: dict[int, float] = {}
        self._prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        super().__init__(*args, **kwargs)

    def _connect(self) -> Any:
        conn = super()._connect()
        if conn not in self._prepared:  # a new connection (the pool's own are known)
            # PERF: jsonb columns decoded by msgspec rather than json.loads
            register_default_jsonb(conn_or_curs=conn, loads=msgspec.json.decode)
            self._prepared[conn] = set()
        return conn

    def _can_reuse(self, conn: Any) -> bool:
        reusable = bool(super()._can_reuse(conn))
        if reusable:
            self._returned_at[id(conn)] = time.monotonic()
        return reusable

    def _is_closed(self, conn: Any) -> bool:
        returned = self._returned_at.pop(id(conn), None)
        if (returned is not None and time.monotonic() - returned < self.PING_AFTER_IDLE_S
                and not conn.closed
                and conn.get_transaction_status() == TRANSACTION_STATUS_IDLE):
            return False
        return bool(super()._is_closed(conn))

    # PERF: a request thread keeps its connection between requests (Django's persistent
    # connections) instead of checking it in and out of the pool each time: the web process
    # has a fixed number of request threads, each needing one connection at a time, so the
    # pool bookkeeping bought nothing. Only a connection that is open, idle and outside any
    # transaction is kept; one kept longer than PING_AFTER_IDLE_S goes back through the pool,
    # which pings it before handing it out again.
    def release_after_request(self) -> None:
        """End of a request: keep this thread's connection if it is healthy, else return it."""
        state = self._state
        conn = state.conn
        if state.closed or conn is None:
            return
        if (not self.in_transaction() and not conn.closed
                and conn.get_transaction_status() == TRANSACTION_STATUS_IDLE):
            state.pms_kept_since = time.monotonic()
            return
        state.pms_kept_since = None
        self.close()

    def resume_for_request(self) -> None:
        """Start of a request: a connection kept idle for long is checked by the pool again."""
        state = self._state
        since = getattr(state, "pms_kept_since", None)
        if since is None:
            return
        state.pms_kept_since = None
        if state.closed or time.monotonic() - since < self.PING_AFTER_IDLE_S:
            return
        conn = state.conn
        self.close()
        self._returned_at.pop(id(conn), None)  # so the next checkout pings it

    def _close_raw(self, conn: Any) -> None:
        self._returned_at.pop(id(conn), None)
        super()._close_raw(conn)

    # PERF: BEGIN and the tenant settings ride along with the transaction's first statement
    # (psycopg2 sends the statements in one round trip and returns the last one's result), and
    # a transaction that ran no statement sends neither COMMIT nor ROLLBACK. The settings are
    # made by statements PREPAREd once per connection (`pms_begin`, `pms_scope`), so PostgreSQL
    # does not parse and plan the same SELECT for every request. Every setting is
    # transaction-local (is_local = true; set_config('lock_timeout', ..., true) is SET LOCAL),
    # so none leaks to the next user of a pooled connection. `app.cross_env` only widens the
    # policies of the outbox and audit tables (the relay); see pms.db.migrator.
    SESSION_STATEMENTS = {
        "pms_begin": ("(text, text) AS SELECT set_config('lock_timeout', '"
                      + str(DEFAULT_LOCK_TIMEOUT_MS) + "', true), "
                      "set_config('app.env_id', $1, true), set_config('app.cross_env', $2, true)"),
        "pms_scope": ("(text, text) AS SELECT set_config('app.env_id', $1, true), "
                      "set_config('app.cross_env', $2, true)"),
        "pms_begin_nowait": ("(text, text) AS SELECT set_config('lock_timeout', '"
                             + str(DEFAULT_LOCK_TIMEOUT_MS) + "', true), "
                             "set_config('synchronous_commit', 'off', true), "
                             "set_config('app.env_id', $1, true), "
                             "set_config('app.cross_env', $2, true)"),
    }
    BEGIN_SQL = "BEGIN; EXECUTE pms_begin (%s, %s); "
    BEGIN_NOWAIT_SQL = "BEGIN; EXECUTE pms_begin_nowait (%s, %s); "

    def begin(self, isolation_level: Any = None) -> None:  # noqa: D102
        if self.is_closed():
            self.connect()  # as peewee's BEGIN would have (autoconnect), before the txn is pushed
        env = current_env()
        self._state.pms_begin = (str(env) if env else "", "on" if is_unscoped() else "off")

    @contextmanager
    def commit_without_waiting(self) -> Iterator[None]:
        """Transactions begun in the block commit without waiting for the WAL flush
        (`synchronous_commit = off`, transaction-local). Only for bookkeeping whose loss in a
        database crash is harmless: the next synchronous commit on the server flushes it anyway,
        because the WAL is flushed in order."""
        previous = getattr(self._state, "pms_nowait", False)
        self._state.pms_nowait = True
        try:
            yield
        finally:
            self._state.pms_nowait = previous

    # Reads outside a transaction (`scoped_statements()`): each statement is sent as
    # "EXECUTE pms_scope (...); <statement>", which PostgreSQL runs as ONE implicit transaction,
    # so the transaction-local settings cover the statement and vanish with it. One round trip,
    # no BEGIN/COMMIT; READ COMMITTED gives each statement its own snapshot either way.
    SCOPE_SQL = "EXECUTE pms_scope (%s, %s); "

    def _execute_cursor(self, sql: str, params: Any, **cursor_options: Any) -> Any:
        state = self._state
        prefix, prefix_params = None, ()
        if getattr(state, "pms_begin", None) is not None:
            if getattr(state, "pms_nowait", False):
                name, prefix = "pms_begin_nowait", self.BEGIN_NOWAIT_SQL
            else:
                name, prefix = "pms_begin", self.BEGIN_SQL
            self._prepare(state.conn, name, self.SESSION_STATEMENTS[name])
            prefix_params, state.pms_begin = state.pms_begin, None
        elif getattr(state, "pms_scoped", False) and not self.in_transaction():
            self._prepare(state.conn, "pms_scope", self.SESSION_STATEMENTS["pms_scope"])
            env = current_env()
            prefix = self.SCOPE_SQL
            prefix_params = (str(env) if env else "", "on" if is_unscoped() else "off")
        if prefix is not None:
            if not params:
                sql = sql.replace("%", "%%")  # the combined statement is interpolated
            sql = prefix + sql
            params = (*prefix_params, *(params or ()))
        return super()._execute_cursor(sql, params, **cursor_options)

    def _prepare(self, conn: Any, name: str, declaration: str) -> None:
        """PREPARE `name` on this connection unless it already has it (its own round trip,
        once per connection: a PREPARE sent together with a statement that then fails would
        stay prepared on the server while we believed it was not)."""
        prepared = self._prepared.get(conn)
        if prepared is None:
            prepared = self._prepared[conn] = set()
        if name in prepared:
            return
        with peewee.__exception_wrapper__:
            conn.cursor().execute(f"PREPARE {name} {declaration}")
        prepared.add(name)

    def execute_prepared(self, name: str, sql: str, params: tuple[Any, ...],
                         types: tuple[str, ...]) -> Any:
        """Run `sql` (with %s placeholders) as a per-connection prepared statement.

        PERF: a hot by-id read spends more time being planned than executed; the generic plan
        of a prepared statement skips that. Inside a transaction the plain statement is used
        (prepared statements serve the single-statement read path).
        """
        if self.in_transaction():
            return self.execute_sql(sql, params)
        conn = self.connection()
        prepared = self._prepared.get(conn)
        if prepared is None or name not in prepared:
            numbers = iter(range(1, len(params) + 1))
            body = re.sub(r"%s", lambda _m: f"${next(numbers)}", sql)
            self._prepare(conn, name, f"({', '.join(types)}) AS {body}")
        return self.execute_sql(f"EXECUTE {name} ({', '.join(['%s'] * len(params))})", params)

    @contextmanager
    def scoped_statements(self) -> Iterator[None]:
        """Run the block's statements each in its own tenant-scoped implicit transaction."""
        if self.is_closed():
            self.connect()
        previous = getattr(self._state, "pms_scoped", False)
        self._state.pms_scoped = True
        try:
            yield
        finally:
            self._state.pms_scoped = previous

    def commit(self) -> None:  # noqa: D102
        if getattr(self._state, "pms_begin", None) is not None:
            self._state.pms_begin = None  # nothing ran: nothing to commit
            return
        super().commit()

    def rollback(self) -> None:  # noqa: D102
        if getattr(self._state, "pms_begin", None) is not None:
            self._state.pms_begin = None
            return
        super().rollback()


class PmsSqliteDatabase(peewee.SqliteDatabase):
    """SQLite in WAL mode; write transactions take the lock up front (BEGIN IMMEDIATE)."""

    field_types = {**peewee.SqliteDatabase.field_types, "JSON": "JSON"}

    def release_after_request(self) -> None:
        """End of a request: close the connection (an SQLite connection costs a file open)."""
        self.close()

    def resume_for_request(self) -> None:
        """Start of a request: nothing kept, nothing to check."""


def _pg_params(url: str, *, pool_size: int, statement_timeout_ms: int) -> dict[str, Any]:
    parsed = urlparse(url)
    params: dict[str, Any] = {
        "database": unquote(parsed.path.lstrip("/")),
        "host": parsed.hostname or "127.0.0.1",
        "port": parsed.port or 5432,
    }
    if parsed.username:
        params["user"] = unquote(parsed.username)
    if parsed.password:
        params["password"] = unquote(parsed.password)
    query = dict(parse_qsl(parsed.query))
    options = query.pop("options", "")
    options += f" -c statement_timeout={statement_timeout_ms}"
    params["options"] = options.strip()
    params["application_name"] = query.pop("application_name", "pms")
    params.update(query)
    params["max_connections"] = pool_size
    params["stale_timeout"] = 300
    params["timeout"] = 10
    params["connect_timeout"] = 5
    return params


def make_database(url: str, *, pool_size: int = 8, statement_timeout_ms: int = 5000) -> peewee.Database:
    """A database object for `url` (postgresql:// or sqlite:///), not yet connected."""
    if url.startswith(("postgres://", "postgresql://")):
        return PmsPostgresDatabase(**_pg_params(
            url, pool_size=pool_size, statement_timeout_ms=statement_timeout_ms))
    if url.startswith("sqlite://"):
        path = sqlite_path(url)
        if path not in ("", ":memory:"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return PmsSqliteDatabase(path or ":memory:", pragmas=SQLITE_PRAGMAS, timeout=10,
                                 check_same_thread=False)
    raise ValueError(f"unsupported database URL scheme: {url.split(':', 1)[0]}")


def init_db(url: str, *, pool_size: int = 8, statement_timeout_ms: int = 5000) -> peewee.Database:
    """Bind the global proxy to a new database for `url` and return it."""
    database = make_database(url, pool_size=pool_size, statement_timeout_ms=statement_timeout_ms)
    db.initialize(database)
    return database


def is_postgres(database: peewee.Database | None = None) -> bool:
    target = database if database is not None else db.obj
    return isinstance(target, peewee.PostgresqlDatabase)


@contextmanager
def read_statements() -> Iterator[None]:
    """Tenant-scoped reads: single-round-trip statements on PostgreSQL, a transaction on SQLite."""
    target = db.obj
    if isinstance(target, PmsPostgresDatabase):
        with target.scoped_statements():
            yield
    else:
        with db.atomic():
            yield


@contextmanager
def commit_without_waiting() -> Iterator[None]:
    """See PmsPostgresDatabase.commit_without_waiting (SQLite: commits as usual)."""
    target = db.obj
    if isinstance(target, PmsPostgresDatabase):
        with target.commit_without_waiting():
            yield
    else:
        yield


def write_begin_args() -> dict[str, Any]:
    """Arguments for `db.atomic()` of a write transaction (SQLite: BEGIN IMMEDIATE)."""
    return {"lock_type": "IMMEDIATE"} if isinstance(db.obj, peewee.SqliteDatabase) else {}

