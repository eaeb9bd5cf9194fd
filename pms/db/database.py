"""The database handle: a `DatabaseProxy` bound at start-up by `init_db(url)`, and the one
connection scope every entry point opens (`connection_scope()`).

What the PostgreSQL class adds to peewee's pooled database, and why (nothing else):

- **Transaction settings ride with the first statement.** `begin()` sends nothing; the
  transaction's first statement goes out as `BEGIN; SET LOCAL ...; <statement>` in one round
  trip, carrying `statement_timeout`, `lock_timeout`, the tenant (`app.env_id`, read by the
  row-level-security policies) and, only when on, `app.cross_env` (the relay's wider policy on
  the outbox and audit tables), all transaction-local. A transaction that ran no statement sends
  neither BEGIN nor COMMIT. A *prelude* (`prelude()`) may follow the settings in that same
  message, before the first statement: a statement whose result is never read and which signals
  by raising an SQLSTATE of class `PM` (`PreludeRefused`), e.g. the Idempotency-Key claim.
- **A request's first check** (`check_first()`): a statement that goes out with whichever
  statement the connection scope sends first (in a transaction or not), right after the
  settings, and that raises SQLSTATE `PMC01` when what the caller assumed no longer holds (the
  policy gate's cached version of the env's policies). On that refusal nothing of the message
  ran: the transaction (if any) is rolled back on the server, the caller's `on_refused` runs
  (its statements go out on their own), and the statement is sent again, with its BEGIN,
  settings and preludes, without the check. So a check costs no round trip while it holds.
- **Statements outside a transaction** are sent as `SET LOCAL ...; <statement>`, which
  PostgreSQL runs as ONE implicit transaction, so the same settings cover the statement and
  vanish with it.
- **Nothing session-level, ever** (PgBouncer transaction pooling): no `options`
  startup parameter, no SQL `PREPARE`, no `SET` without `LOCAL`. A server connection handed to
  the next client carries none of our state. (Plans worth keeping are kept by PL/pgSQL functions
  that migrations create: the server caches their plans per connection, which is no state a
  client depends on.)
- **No statement can skip the settings**: `execute_sql` (every peewee query) adds them, and a
  direct `cursor()` while a BEGIN is pending sends the BEGIN and settings first; a direct
  `cursor()` outside any transaction is refused (its statements would run in autocommit
  without the tenant).
- **Strict tenancy for tests** (`strict_tenancy`): records, or raises on, any statement that
  would run with no tenant outside `tenant_free()` / `unscoped()`.
- **jsonb decoded by msgspec** (PERF), registered once per new connection.
- **A connection outlives no thread.** The pool remembers which thread checked each connection
  out. A thread that ends holding one (a request thread that kept its idle connection, a
  thread that died inside a scope) would keep it from the pool for good; when the pool is full,
  the connections of ended threads are closed (their open transaction, if any, rolls back on
  the server) and their places reused, with a warning in the log.

SQLite runs in WAL mode with foreign keys on; write transactions take the lock up front.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

import msgspec
import peewee
from playhouse.pool import MaxConnectionsExceeded, PooledPostgresqlDatabase
from psycopg2.extensions import TRANSACTION_STATUS_IDLE
from psycopg2.extras import register_default_jsonb

from pms.config import sqlite_path
from pms.db import commit_outcome
from pms.db.current import take_pending_writes
from pms.db.scope import current_env, is_tenant_free, is_unscoped


class _ReadRoute(threading.local):
    """The database this thread's reads go to instead of the bound one: a hot
    standby chosen for one GET request by pms.api.readroute, else None."""

    target: Any = None


_READ_ROUTE = _ReadRoute()


_BOUND = peewee.Proxy.__dict__["obj"]  # the slot that holds the bound database


class RoutingDatabaseProxy(peewee.DatabaseProxy):
    """peewee's proxy whose `obj` is the thread's read route (a replica, for the span of one
    routed GET) when one is set, else the bound database (the primary). Everything reached
    through the proxy follows the route: model queries, `db.execute_sql`, `db.atomic()`, and
    the code that takes `db.obj` to run statements itself. `primary_database()` is the
    primary whatever the route (the routing itself, and the caller's write mark)."""

    __slots__ = ()

    @property  # type: ignore[override]
    def obj(self) -> Any:
        target = _READ_ROUTE.target
        return target if target is not None else _BOUND.__get__(self)

    @obj.setter
    def obj(self, value: Any) -> None:
        _BOUND.__set__(self, value)

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr not in ("obj", "_callbacks", "_Model"):
            raise AttributeError("Cannot set attribute on proxy.")
        object.__setattr__(self, attr, value)


def primary_database() -> Any:
    """The bound database (the primary), whatever this thread's read route."""
    return _BOUND.__get__(db)


def route_reads(target: Any) -> None:
    """Send this thread's statements through `db` to `target` (a replica), or back to the
    primary with None (pms.api.readroute)."""
    _READ_ROUTE.target = target


def read_route() -> Any:
    """The replica this thread's reads go to, or None (the primary)."""
    return _READ_ROUTE.target


db: peewee.DatabaseProxy = RoutingDatabaseProxy()

SQLITE_PRAGMAS = (
    ("journal_mode", "wal"),
    ("foreign_keys", 1),
    ("synchronous", "normal"),
    ("busy_timeout", 10000),
)


log = logging.getLogger("pms.db")

# Every write transaction waits at most this long for a row lock, then fails (503 Busy with
# Retry-After) instead of queueing: below the 5 s statement timeout.
DEFAULT_LOCK_TIMEOUT_MS = 4000
DEFAULT_STATEMENT_TIMEOUT_MS = 5000

_ISOLATION_LEVELS = {"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"}


class PreludeRefused(Exception):
    """A transaction's prelude (PmsPostgresDatabase.prelude) raised an SQLSTATE of class `PM`
    (ours): the message stopped before the transaction's first statement ran. `sqlstate` says
    which refusal; the transaction is aborted and must be rolled back."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"the transaction's prelude refused it (SQLSTATE {sqlstate})")
        self.sqlstate = sqlstate


def _sqlstate(exc: BaseException) -> str | None:
    code = getattr(getattr(exc, "orig", exc), "pgcode", None)
    return code if isinstance(code, str) else None


def _prelude_refusal(exc: BaseException) -> PreludeRefused | None:
    code = _sqlstate(exc)
    return PreludeRefused(code) if code is not None and code.startswith("PM") else None


class UnscopedStatement(RuntimeError):
    """Raised by strict tenancy (tests) for a statement that would run without a tenant."""


class _ScopeState(threading.local):
    """Per-thread bookkeeping of the connection scope and the deferred BEGIN."""

    depth = 0
    kept_since: float | None = None
    pending_begin: str | None = None
    pending_params: tuple[Any, ...] = ()  # values of the preludes' placeholders (first)
    pending_unscoped = False
    nowait = False
    direct_ok = False
    committed = False  # the transaction's COMMIT went out with its last statements
    announced = False  # the transaction announces its id (announce_xact)
    settings_end = 0  # where the preludes start in pending_begin (a first check goes there)
    # (sql, params, on_refused, the env it is about): rides only a statement of that env
    first_check: tuple[str, tuple[Any, ...], Callable[[], None], Any] | None = None
    side_channel = False  # statements of a refused check's on_refused: implicit, on their own


# the SQLSTATE a request's first check raises when its assumption no longer holds
FIRST_CHECK_REFUSED = "PMC01"


class _ScopedConnections:
    """`connection_scope()` for both databases: the outermost scope of a thread owns the
    connection it opens (or the one an earlier request scope kept) and releases it at exit."""

    # PERF: a request thread keeps its idle connection between requests (Django's persistent
    # connections) instead of checking it in and out of the pool, whose check-out pings it (one
    # round trip per request). A kept connection idle longer than this goes back through the
    # pool, which pings it before handing it out again.
    PING_AFTER_IDLE_S = 2.0

    _scope: _ScopeState

    @contextmanager
    def connection_scope(self, *, keep_idle: bool = False) -> Iterator[None]:
        """One connection for the block (see module `connection_scope`)."""
        state = self._scope
        if state.depth:
            state.depth += 1
            try:
                yield
            finally:
                state.depth -= 1
            return
        kept = state.kept_since
        state.kept_since = None
        if kept is not None and not self.is_closed() and (
                time.monotonic() - kept >= self.PING_AFTER_IDLE_S):
            self.close()  # back to the pool, which pings it at the next check-out
        owns = kept is not None or self.is_closed()
        state.depth = 1
        try:
            yield
        finally:
            state.depth = 0
            state.first_check = None
            if owns and not self.is_closed():
                abandoned = self.in_transaction() or self._connection_in_transaction()
                if abandoned:
                    self._abandon_transaction()
                if keep_idle and not abandoned and self._keepable():
                    state.kept_since = time.monotonic()
                else:
                    self.close()

    def _abandon_transaction(self) -> None:
        """Safety net: the entry point ends with a transaction still open (a `begin()` whose
        commit or rollback never ran). Roll it back and forget it, so the thread's next scope
        starts clean instead of inheriting a half-done transaction (and its locks)."""
        log.warning("connection scope ended inside an open transaction: rolled back")
        try:
            self.rollback()
        finally:
            while self.in_transaction():
                self.pop_transaction()

    def _keepable(self) -> bool:
        return False

    def _connection_in_transaction(self) -> bool:
        """The server-side view: a transaction begun with `begin()` is not on peewee's stack."""
        return False


class PmsPostgresDatabase(_ScopedConnections, PooledPostgresqlDatabase):
    """Pooled PostgreSQL whose every statement runs with the tenant and timeout settings."""

    field_types = {**PooledPostgresqlDatabase.field_types, "JSON": "JSONB", "TIMESTAMPTZ": "TIMESTAMPTZ"}

    def __init__(self, *args: Any, statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS,
                 lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS, **kwargs: Any) -> None:
        self._scope = _ScopeState()
        self._jsonb_registered: weakref.WeakSet[Any] = weakref.WeakSet()
        self.statement_timeout_ms = int(statement_timeout_ms)
        self.lock_timeout_ms = int(lock_timeout_ms)
        # TEST-ONLY: None (off), or a callable taking the SQL of a statement that would run
        # with no tenant outside tenant_free()/unscoped() (record it, or raise).
        self.strict_tenancy: Callable[[str], None] | None = None
        # the thread that checked each in-use connection out, by the pool's key
        self._owners: dict[Any, weakref.ref[threading.Thread]] = {}
        super().__init__(*args, **kwargs)

    # -- the pool: connections of ended threads go back ------------------------------------

    def _connect(self) -> Any:
        with self._pool_lock:
            try:
                conn = super()._connect()
            except MaxConnectionsExceeded:
                if not self._reclaim_orphans():
                    raise
                conn = super()._connect()
            self._owners[self.conn_key(conn)] = weakref.ref(threading.current_thread())
            return conn

    def _close(self, conn: Any, close_conn: bool = False) -> None:
        with self._pool_lock:
            self._owners.pop(self.conn_key(conn), None)
            super()._close(conn, close_conn)

    def _reclaim_orphans(self) -> int:
        """Close the in-use connections whose thread has ended (the pool lock is held); how
        many. Nothing else can reach such a connection: its thread's state went with it."""
        reclaimed = 0
        for key, pooled in list(self._in_use.items()):
            owner = self._owners.get(key)
            thread = owner() if owner is not None else None
            if owner is None or (thread is not None and thread.is_alive()):
                continue
            del self._in_use[key]
            self._owners.pop(key, None)
            self._close_raw(pooled.connection)
            reclaimed += 1
        if reclaimed:
            log.warning("connections of ended threads reclaimed", extra={"reclaimed": reclaimed})
        return reclaimed

    def _initialize_connection(self, conn: Any) -> None:
        # peewee's hook after every connect (each pool check-out): register once per connection.
        if conn not in self._jsonb_registered:
            # PERF: jsonb columns decoded by msgspec rather than json.loads
            register_default_jsonb(conn_or_curs=conn, loads=msgspec.json.decode)
            self._jsonb_registered.add(conn)

    def _keepable(self) -> bool:
        conn = self._state.conn
        return (conn is not None and not conn.closed
                and conn.get_transaction_status() == TRANSACTION_STATUS_IDLE)

    def _connection_in_transaction(self) -> bool:
        conn = self._state.conn
        return self._scope.pending_begin is not None or (
            conn is not None and not conn.closed
            and conn.get_transaction_status() != TRANSACTION_STATUS_IDLE)

    # -- the settings ----------------------------------------------------------------------

    def _settings_sql(self, *, nowait: bool = False) -> tuple[str, bool]:
        """The transaction-local settings for the active scope, as `SET LOCAL` statements
        (literals: integers, a UUID and fixed words), and whether they leave the tenant unset
        outside a declared tenant-free path.

        PERF: `SET LOCAL` is a utility statement: no plan, no result row. The one
        `SELECT set_config(...)` of four settings it replaces took a GET of a property from
        about 0.24 to 0.20 ms of database CPU, and the client no longer reads a row back
        (measured in-process, alternating runs). `app.cross_env` is sent only when on: a
        transaction starts without it (nothing is session-level, ever), which the policies
        read as off. The timeouts stay per transaction rather than role defaults: their values
        are the deployment's settings, and a role default would bind every role the service
        and its tools use to one migration's numbers."""
        env = current_env()
        cross = is_unscoped()
        sql = (f"SET LOCAL statement_timeout = {self.statement_timeout_ms}; "
               f"SET LOCAL lock_timeout = {self.lock_timeout_ms}; "
               f"SET LOCAL app.env_id = '{env or ''}'")
        if cross:
            sql += "; SET LOCAL app.cross_env = on"
        if nowait:
            sql += "; SET LOCAL synchronous_commit = off"
        return sql, env is None and not cross and not is_tenant_free()

    def begin(self, isolation_level: str | None = None) -> None:
        """Defer BEGIN (with `isolation_level`, e.g. "SERIALIZABLE", when given) to the
        transaction's first statement, which carries it and the settings."""
        if self.is_closed():
            self.connect()  # as peewee's BEGIN would have (autoconnect), before the txn is pushed
        begin = "BEGIN"
        if isolation_level is not None:
            level = str(isolation_level).upper()
            if level not in _ISOLATION_LEVELS:
                raise ValueError(f"unknown isolation level: {isolation_level!r}")
            begin += f" ISOLATION LEVEL {level}"
        state = self._scope
        state.announced = False
        settings, state.pending_unscoped = self._settings_sql(nowait=state.nowait)
        state.pending_begin = f"{begin}; {settings}; "
        state.settings_end = len(state.pending_begin)
        state.pending_params = ()

    def prelude(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Send `sql` (with `%s` placeholders for `params`) in the transaction's first round
        trip, after BEGIN and the settings and before the first statement. Its result is never
        read: a prelude signals by raising, which aborts the message before the transaction's
        first statement runs (e.g. the Idempotency-Key claim, pms.api.idempotency). Call right
        after `begin()`, before any statement."""
        state = self._scope
        if state.pending_begin is None:
            raise RuntimeError("prelude() needs a begun transaction that has sent nothing yet")
        state.pending_begin += f"{sql}; "
        state.pending_params += tuple(params)

    def check_first(self, sql: str, params: tuple[Any, ...], on_refused: Callable[[], None],
                    env: Any) -> None:
        """Send `sql` with the connection scope's next first statement in tenant `env` (see
        the module docstring; a tenant-free statement cannot see the env's rows); `on_refused`
        runs when it raises SQLSTATE `PMC01`, before the statement is sent again without it
        (it may raise instead). Replaces a check not sent yet."""
        self._scope.first_check = (sql, tuple(params), on_refused, env)

    def _take_check(self) -> tuple[str, tuple[Any, ...], Callable[[], None], Any] | None:
        state = self._scope
        check = state.first_check
        if check is None or state.side_channel or check[3] != current_env():
            return None
        state.first_check = None
        return check

    def check_pending(self) -> bool:
        """Whether the scope's first check is still waiting for a statement to ride."""
        return self._scope.first_check is not None

    def sent_nothing(self) -> bool:
        """Whether the open transaction is still waiting for its first statement (its BEGIN,
        settings and preludes not sent)."""
        return self._scope.pending_begin is not None

    @contextmanager
    def commit_without_waiting(self) -> Iterator[None]:
        """Transactions begun in the block commit without waiting for the WAL flush
        (`synchronous_commit = off`, transaction-local). Only for bookkeeping whose loss in a
        database crash is harmless: the next synchronous commit on the server flushes it anyway,
        because the WAL is flushed in order."""
        state = self._scope
        previous = state.nowait
        state.nowait = True
        try:
            yield
        finally:
            state.nowait = previous

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        """peewee's execute_sql, with the pending BEGIN and settings, or the settings of an
        implicit transaction, the scope's first check, and the writes the unit of work queued
        (the autoflush, see `pms.db.current.take_pending_writes`: read-your-writes at no round
        trip of its own), sent in the same round trip."""
        state = self._scope
        pending = None if state.side_channel else take_pending_writes()
        if pending:
            if params is None and "%" in sql:  # (a text psycopg2 must not interpolate)
                self._send_writes(pending)
            else:
                sql = "; ".join([*(text for text, _ in pending), sql])
                params = (*(v for _, values in pending for v in values), *(params or ()))
        own_params = params
        prefix = None if state.side_channel else state.pending_begin
        saved = None
        if prefix is not None:
            saved = (prefix, state.pending_params, state.pending_unscoped, state.settings_end)
            state.pending_begin = None
            unscoped_ = state.pending_unscoped
            if state.pending_params:  # the preludes' values come first, as their placeholders
                params = (*state.pending_params, *(params or ()))
                state.pending_params = ()
        elif state.side_channel or not self.in_transaction():
            prefix, unscoped_ = self._settings_sql()
            prefix += "; "
        check = self._take_check() if prefix is not None else None
        if check is not None:
            at = state.settings_end if saved is not None else len(prefix)
            prefix = f"{prefix[:at]}{check[0]}; {prefix[at:]}"
            params = (*check[1], *(params or ()))
        sent = sql
        if prefix is not None:
            if unscoped_ and self.strict_tenancy is not None:
                self.strict_tenancy(sql)
            # NOTE: peewee always passes a params tuple, so psycopg2 interpolates the whole
            # string: the prefix holds no `%` but its preludes' placeholders (whose values lead
            # the params), and the statement's own are already escaped.
            sent = prefix + sql
        state.direct_ok = True
        try:
            return super().execute_sql(sent, params)
        except peewee.DatabaseError as exc:
            if check is not None and _sqlstate(exc) == FIRST_CHECK_REFUSED:
                state.direct_ok = False
                self._check_refused(check, saved)
                return self.execute_sql(sql, own_params)
            refused = _prelude_refusal(exc) if prefix is not None else None
            if refused is not None:
                raise refused from exc
            raise
        finally:
            state.direct_ok = False

    def _check_refused(self, check: tuple[str, tuple[Any, ...], Callable[[], None], Any],
                       begun: tuple[str, tuple[Any, ...], bool, int] | None) -> None:
        """The first check refused: nothing of its message ran. Roll back the transaction it
        began (an implicit one ended with the error), put its BEGIN back for the statement's
        second sending, and run the check's `on_refused`, whose statements go on their own."""
        state = self._scope
        if begun is not None:
            state.direct_ok = True
            try:
                super().execute_sql("ROLLBACK")
            finally:
                state.direct_ok = False
            (state.pending_begin, state.pending_params, state.pending_unscoped,
             state.settings_end) = begun
        state.side_channel = True
        try:
            check[2]()
        finally:
            state.side_channel = False

    def cursor(self, named_cursor: Any = None) -> Any:
        """A cursor for statements of the current transaction; see the module docstring."""
        state = self._scope
        if state.direct_ok:
            return super().cursor(named_cursor)
        pending = take_pending_writes()
        if pending:  # a direct cursor reads after queued writes: they go first
            self._send_writes(pending)
        pending = state.pending_begin
        if pending is not None:  # a direct cursor as the transaction's first statement
            state.pending_begin = None
            if state.pending_unscoped and self.strict_tenancy is not None:
                self.strict_tenancy("<direct cursor>")
            saved = (pending, state.pending_params, state.pending_unscoped, state.settings_end)
            params, state.pending_params = state.pending_params, ()
            check = self._take_check()
            if check is not None:
                at = state.settings_end
                pending = f"{pending[:at]}{check[0]}; {pending[at:]}"
                params = (*check[1], *params)
            try:
                with peewee.__exception_wrapper__:
                    super().cursor().execute(pending.rstrip("; "), params or None)
            except peewee.DatabaseError as exc:
                if check is not None and _sqlstate(exc) == FIRST_CHECK_REFUSED:
                    self._check_refused(check, saved)
                    return self.cursor(named_cursor)
                refused = _prelude_refusal(exc)
                if refused is not None:
                    raise refused from exc
                raise
        elif not self.in_transaction():
            conn = None if self.is_closed() else self._state.conn
            if conn is None or conn.get_transaction_status() == TRANSACTION_STATUS_IDLE:
                raise UnscopedStatement(
                    "db.cursor() outside a transaction would run without the tenant settings; "
                    "use execute_sql() or open a transaction")
        return super().cursor(named_cursor)

    def _send_writes(self, pending: list[tuple[str, list[Any]]]) -> None:
        self.execute_sql("; ".join(text for text, _ in pending),
                         tuple(v for _, values in pending for v in values))

    def execute_and_commit(self, sql: str, params: Any = None) -> None:
        """Run the transaction's last statements and its COMMIT in ONE round trip (PERF, issue
        10); the transaction's own commit() then sends nothing. Call as the last statement of a
        transaction (e.g. a unit of work's batched writes)."""
        if not self.in_transaction():
            raise RuntimeError("execute_and_commit() needs an open transaction")
        try:
            self.execute_sql(f"{sql}; COMMIT", params)
        except (peewee.DatabaseError, peewee.InterfaceError) as exc:
            self._settle_lost_commit(exc)  # returns only if the transaction committed
        self._scope.committed = True

    def commit(self) -> None:
        """COMMIT, or nothing when the transaction never ran a statement (or already sent it
        with its last statements, execute_and_commit)."""
        state = self._scope
        if state.committed:
            state.committed = False
            return
        if state.pending_begin is not None:
            state.pending_begin = None
            state.pending_params = ()
            return
        state.direct_ok = True
        try:
            super().commit()
        except (peewee.DatabaseError, peewee.InterfaceError) as exc:
            self._settle_lost_commit(exc)  # returns only if the transaction committed
        finally:
            state.direct_ok = False

    def rollback(self) -> None:
        """ROLLBACK, or nothing when the transaction never ran a statement (or its connection
        is lost: the server rolls back a transaction whose client is gone)."""
        state = self._scope
        state.committed = False
        if state.pending_begin is not None:
            state.pending_begin = None
            state.pending_params = ()
            return
        conn = self._state.conn
        if conn is not None and conn.closed:
            return
        state.direct_ok = True
        try:
            super().rollback()
        finally:
            state.direct_ok = False

    # -- a lost COMMIT (pms.db.commit_outcome) ----------------------------

    commit_status_wait_s = commit_outcome.COMMIT_STATUS_WAIT_S

    def announce_xact(self) -> None:
        """Have the transaction announce its id (a NOTICE, see pms.db.commit_outcome) in its
        first message: a prelude, so no round trip of its own. Call right after `begin()`."""
        conn = self._state.conn
        if conn is not None:
            del conn.notices[:]  # the transaction's own notices only
        self.prelude(commit_outcome.ANNOUNCE_SQL)
        self._scope.announced = True

    def _settle_lost_commit(self, exc: peewee.PeeweeException) -> None:
        """`exc` ended a round trip that carried the COMMIT: re-raise it unless it lost the
        connection; else return if the transaction committed (on a new connection for what
        the caller still runs), re-raise it if it aborted, or raise CommitOutcomeUnknown.
        Only for a transaction that announced its id (a unit of work's): the others (the
        relay's bookkeeping, CLI maintenance) keep the driver's error."""
        if not (self._scope.announced and commit_outcome.lost(exc)):
            raise exc
        conn = self._state.conn
        commit_outcome.settle(exc, conn, {"dbname": self.database, **self.connect_params},
                              wait_s=self.commit_status_wait_s)
        try:
            fresh = self._connect()
        except Exception:  # noqa: BLE001 - committed: the answer stands; later reads may fail
            log.warning("no new connection after a lost but committed COMMIT", exc_info=True)
            return
        self._close(conn, close_conn=True)
        self._state.conn = fresh
        self._initialize_connection(fresh)


class PmsSqliteDatabase(_ScopedConnections, peewee.SqliteDatabase):
    """SQLite in WAL mode; write transactions take the lock up front (BEGIN IMMEDIATE). A
    connection scope always closes what it opened (an SQLite connection costs a file open;
    `keep_idle` is PostgreSQL's)."""

    field_types = {**peewee.SqliteDatabase.field_types, "JSON": "JSON"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._scope = _ScopeState()
        super().__init__(*args, **kwargs)

    def _connection_in_transaction(self) -> bool:
        conn = self._state.conn
        return conn is not None and conn.in_transaction

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        """peewee's execute_sql, after the writes the unit of work queued (the autoflush, see
        `pms.db.current.take_pending_writes`; on SQLite a queued row is saved by peewee)."""
        for text, values in take_pending_writes() or ():
            super().execute_sql(text, values)
        return super().execute_sql(sql, params)


def _pg_params(url: str, *, pool_size: int) -> dict[str, Any]:
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
    if "options" in query:
        # PgBouncer refuses the `options` startup parameter; settings are transaction-local.
        raise ValueError("the database URL must not carry `options` (PgBouncer refuses it); "
                         "the timeouts are set per transaction")
    params["application_name"] = query.pop("application_name", "pms")
    params.update(query)
    params["max_connections"] = pool_size
    params["stale_timeout"] = 300
    params["timeout"] = 10
    params["connect_timeout"] = 5
    return params


def make_database(url: str, *, pool_size: int = 8,
                  statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS) -> peewee.Database:
    """A database object for `url` (postgresql:// or sqlite:///), not yet connected."""
    if url.startswith(("postgres://", "postgresql://")):
        return PmsPostgresDatabase(statement_timeout_ms=statement_timeout_ms,
                                   **_pg_params(url, pool_size=pool_size))
    if url.startswith("sqlite://"):
        path = sqlite_path(url)
        if path not in ("", ":memory:"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return PmsSqliteDatabase(path or ":memory:", pragmas=SQLITE_PRAGMAS, timeout=10,
                                 check_same_thread=False)
    raise ValueError(f"unsupported database URL scheme: {url.split(':', 1)[0]}")


def init_db(url: str, *, pool_size: int = 8,
            statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS) -> peewee.Database:
    """Bind the global proxy to a new database for `url` and return it."""
    database = make_database(url, pool_size=pool_size, statement_timeout_ms=statement_timeout_ms)
    db.initialize(database)
    return database


def is_postgres(database: peewee.Database | None = None) -> bool:
    target = database if database is not None else db.obj
    return isinstance(target, peewee.PostgresqlDatabase)


@contextmanager
def connection_scope(*, keep_idle: bool = False) -> Iterator[None]:
    """The one connection of an entry point (a request, a worker message, a relay loop, a CLI
    command). The outermost scope of a thread owns the connection: if none is open, the first
    statement opens one (peewee's autoconnect) and the scope releases it at exit; inner scopes,
    and connections opened outside any scope, are left alone. Services never connect or close.

    Args:
        keep_idle: PostgreSQL request threads only: keep a healthy idle connection for the
            thread's next scope instead of checking it back in (see PING_AFTER_IDLE_S).
    """
    target = db.obj
    if target is None:
        raise RuntimeError("the database is not initialised (init_db)")
    with target.connection_scope(keep_idle=keep_idle):
        yield


@contextmanager
def read_statements() -> Iterator[None]:
    """Tenant-scoped reads: each statement its own scoped implicit transaction on PostgreSQL
    (the default there), one transaction on SQLite (one snapshot for the block)."""
    if isinstance(db.obj, PmsPostgresDatabase):
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


def announce_xact() -> None:
    """A write transaction just begun announces its id (PostgreSQL; see
    PmsPostgresDatabase.announce_xact), so a COMMIT lost with its connection can be settled."""
    target = db.obj
    if isinstance(target, PmsPostgresDatabase) and target.sent_nothing():
        target.announce_xact()
