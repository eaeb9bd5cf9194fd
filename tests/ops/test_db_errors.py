"""Honest database errors: 503 (with Retry-After) only for the allow-list of pms.db.failures,
every other database error a 500 `internal_error` problem whose log line holds the class, the
SQLSTATE and the constraint but no SQL value. Every error here is provoked for real on
PostgreSQL or SQLite, and answered by the app's own error handlers."""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import falcon
import falcon.testing
import psycopg2
import pytest

from pms.api import problems
from pms.db.database import PmsSqliteDatabase, make_database
from pms.db.scope import tenant_free
from pms.logging import JsonFormatter
from tests import pg


class Probe:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        with tenant_free():
            self.fn()
        resp.media = {"ok": True}


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("pms.api")
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def answer(fn: Callable[[], Any]) -> Any:
    app = falcon.App()
    app.resp_options.media_handlers["application/problem+json"] = falcon.media.JSONHandler()
    problems.register(app)
    app.add_route("/probe", Probe(fn))
    return falcon.testing.TestClient(app).simulate_get("/probe")


def assert_503(resp: Any, code: str) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    assert resp.json["code"] == code and resp.headers["Retry-After"] == "1"


def assert_500(resp: Any) -> None:
    assert resp.status_code == 500, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    assert resp.json["code"] == "internal_error"


@pytest.fixture
def pgdb(pg_database: Any) -> Iterator[Any]:
    database = make_database(pg_database.app_url, pool_size=4)
    try:
        yield database
    finally:
        database.close_all()


def raw(url: str) -> Any:
    conn = psycopg2.connect(url)
    conn.autocommit = True
    return conn


def wait_until_waiting_on_a_lock(pid: int, deadline_s: float = 20.0) -> None:
    admin = raw(pg.admin_url())
    try:
        until = time.monotonic() + deadline_s
        while time.monotonic() < until:
            with admin.cursor() as cur:
                cur.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,))
                row = cur.fetchone()
            if row and row[0] == "Lock":
                return
            time.sleep(0.02)
        raise AssertionError(f"backend {pid} never waited on a lock")
    finally:
        admin.close()


# -- 503: the allow-list -------------------------------------------------------------------------


@pytest.mark.postgres
def test_connection_loss_answers_503_database_unavailable(pgdb):
    with tenant_free():
        pid = pg.backend_pid(pgdb)
    pg.terminate_backend(pid)
    assert_503(answer(lambda: pgdb.execute_sql("SELECT 1")), "database_unavailable")


@pytest.mark.postgres
def test_admin_shutdown_57P01_answers_503_database_unavailable(pgdb):
    with tenant_free():
        pid = pg.backend_pid(pgdb)

    def kill_when_sleeping() -> None:
        admin = raw(pg.admin_url())
        try:
            for _ in range(1000):
                with admin.cursor() as cur:
                    cur.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,))
                    row = cur.fetchone()
                if row and "pg_sleep" in (row[0] or ""):
                    break
                time.sleep(0.01)
        finally:
            admin.close()
        pg.terminate_backend(pid)

    killer = threading.Thread(target=kill_when_sleeping)
    killer.start()
    resp = answer(lambda: pgdb.execute_sql("SELECT pg_sleep(4)"))
    killer.join()
    assert_503(resp, "database_unavailable")


@pytest.mark.postgres
def test_statement_timeout_57014_answers_503_lock_timeout(pg_database):
    short = make_database(pg_database.app_url, statement_timeout_ms=100)
    try:
        assert_503(answer(lambda: short.execute_sql("SELECT pg_sleep(2)")), "lock_timeout")
    finally:
        short.close_all()


@pytest.mark.postgres
def test_lock_timeout_55P03_answers_503_lock_timeout(pgdb, pg_database):
    key = uuid.uuid4().int % 2**62
    holder = raw(pg_database.app_url)
    try:
        with holder.cursor() as cur:
            cur.execute("BEGIN; SELECT pg_advisory_xact_lock(%s)", (key,))

        def wait_for_the_lock() -> None:
            with pgdb.atomic():
                pgdb.execute_sql("SET LOCAL lock_timeout = 100")
                pgdb.execute_sql("SELECT pg_advisory_xact_lock(%s)", (key,))

        assert_503(answer(wait_for_the_lock), "lock_timeout")
    finally:
        holder.close()


@pytest.mark.postgres
def test_serialization_failure_40001_answers_503_lock_timeout(pgdb, pg_database):
    table = f"h2_probe_{uuid.uuid4().hex[:12]}"
    owner = raw(pg_database.owner_url)
    app_role = pg_database.app_url.split("//", 1)[1].split(":", 1)[0].split("@", 1)[0]
    with owner.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, n int)")
        cur.execute(f"INSERT INTO {table} VALUES (1, 0)")
        cur.execute(f'GRANT SELECT, UPDATE ON {table} TO "{app_role}"')
    other = raw(pg_database.app_url)
    try:
        def lose_the_race() -> None:
            # begin(isolation_level) is honoured: REPEATABLE READ keeps the first snapshot
            with pgdb.atomic(isolation_level="REPEATABLE READ"):
                pgdb.execute_sql(f"SELECT n FROM {table} WHERE id = 1")
                with other.cursor() as cur:
                    cur.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 1")
                pgdb.execute_sql(f"UPDATE {table} SET n = n + 1 WHERE id = 1")

        assert_503(answer(lose_the_race), "lock_timeout")
    finally:
        other.close()
        with owner.cursor() as cur:
            cur.execute(f"DROP TABLE {table}")
        owner.close()


@pytest.mark.postgres
def test_deadlock_40P01_answers_503_lock_timeout(pgdb, pg_database):
    first, second = (uuid.uuid4().int % 2**62 for _ in range(2))
    other = raw(pg_database.app_url)
    with other.cursor() as cur:
        cur.execute("BEGIN; SELECT pg_advisory_xact_lock(%s)", (first,))
    with tenant_free():
        pid = pg.backend_pid(pgdb)

    def close_the_cycle() -> None:
        wait_until_waiting_on_a_lock(pid)  # we wait for `first`; now they wait for `second`
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (second,))
            cur.execute("ROLLBACK")

    closer = threading.Thread(target=close_the_cycle)

    def deadlock() -> None:
        with pgdb.atomic():
            pgdb.execute_sql("SELECT pg_advisory_xact_lock(%s)", (second,))
            closer.start()
            pgdb.execute_sql("SELECT pg_advisory_xact_lock(%s)", (first,))

    try:
        resp = answer(deadlock)
        closer.join()
    finally:
        other.close()
    assert_503(resp, "lock_timeout")


def test_sqlite_busy_answers_503_lock_timeout(tmp_path):
    path = tmp_path / "busy.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x int)")
    holder.execute("BEGIN IMMEDIATE")
    impatient = PmsSqliteDatabase(str(path), pragmas=(("busy_timeout", 50),), timeout=0.05)
    try:
        def write() -> None:
            with impatient.atomic(lock_type="IMMEDIATE"):
                impatient.execute_sql("INSERT INTO t VALUES (1)")

        assert_503(answer(write), "lock_timeout")
    finally:
        holder.close()
        impatient.close()


# -- 500: everything else, logged without values --------------------------------------------------


def test_sqlite_no_such_column_is_a_500_with_its_traceback(tmp_path, log_lines):
    database = PmsSqliteDatabase(str(tmp_path / "bug.db"))
    database.execute_sql("CREATE TABLE t (x int)")
    assert_500(answer(lambda: database.execute_sql("SELECT nope FROM t")))
    (line,) = [json.loads(x) for x in log_lines.getvalue().splitlines()]
    assert line["error"] == "sqlite3.OperationalError" and "Traceback" in line["exc"]
    database.close()


def test_sqlite_syntax_error_is_a_500(tmp_path):
    database = PmsSqliteDatabase(str(tmp_path / "syntax.db"))
    assert_500(answer(lambda: database.execute_sql("SELEC 1")))
    database.close()


@pytest.mark.postgres
def test_postgres_syntax_error_42601_is_a_500(pgdb, log_lines):
    assert_500(answer(lambda: pgdb.execute_sql("SELEC 1")))
    (line,) = [json.loads(x) for x in log_lines.getvalue().splitlines()]
    assert line["sqlstate"] == "42601"


@pytest.mark.postgres
def test_postgres_missing_prepared_statement_26000_is_a_500(pgdb, log_lines):
    assert_500(answer(lambda: pgdb.execute_sql("EXECUTE pms_no_such_statement")))
    (line,) = [json.loads(x) for x in log_lines.getvalue().splitlines()]
    assert line["sqlstate"] == "26000"


@pytest.mark.postgres
def test_a_database_error_log_line_holds_no_sql_values(pgdb, pg_database, log_lines):
    secret = f"guest-{uuid.uuid4().hex}@example.com"
    table = f"h2_uniq_{uuid.uuid4().hex[:12]}"

    def duplicate() -> None:
        with pgdb.atomic():
            pgdb.execute_sql(f"CREATE TEMP TABLE {table} (email text CONSTRAINT "
                             f"{table}_email_key UNIQUE)")
            pgdb.execute_sql(f"INSERT INTO {table} VALUES (%s)", (secret,))
            pgdb.execute_sql(f"INSERT INTO {table} VALUES (%s)", (secret,))

    assert_500(answer(duplicate))
    text = log_lines.getvalue()
    assert secret not in text  # neither the value nor the DETAIL line that quotes it
    (line,) = [json.loads(x) for x in text.splitlines()]
    assert line["sqlstate"] == "23505" and line["constraint"] == f"{table}_email_key"
    assert "UniqueViolation" in line["error"] and "duplicate" in line["exc"]


# -- the pool: full is a 503, and an ended thread's connection goes back -------------------------


def _hold_a_connection(database: Any, *, release: threading.Event | None = None) -> None:
    """A thread that checks a connection out, runs a statement and ends (or waits for
    `release`) without giving it back: a request thread that kept its idle connection."""
    def run() -> None:
        with tenant_free():
            database.execute_sql("SELECT 1")
        if release is not None:
            release.wait(30)

    thread = threading.Thread(target=run)
    thread.start()
    if release is None:
        thread.join()


@pytest.mark.postgres
def test_a_full_pool_answers_503_database_unavailable(pg_database):
    database = make_database(pg_database.app_url, pool_size=1)
    database._wait_timeout = 0.2  # the pool's wait for a free connection, shortened
    release = threading.Event()
    try:
        _hold_a_connection(database, release=release)
        deadline = time.monotonic() + 20
        while not database._in_use and time.monotonic() < deadline:
            time.sleep(0.01)
        assert_503(answer(lambda: database.execute_sql("SELECT 1")), "database_unavailable")
    finally:
        release.set()
        database.close_all()


@pytest.mark.postgres
def test_the_connections_of_ended_threads_go_back_to_the_pool(pg_database, caplog):
    database = make_database(pg_database.app_url, pool_size=2)
    database._wait_timeout = 0.2
    try:
        for _ in range(5):  # five ended threads, each leaving its connection checked out
            _hold_a_connection(database)
        with caplog.at_level(logging.WARNING, logger="pms.db"):
            resp = answer(lambda: database.execute_sql("SELECT 1"))
        assert resp.status_code == 200, resp.text
        assert len(database._in_use) <= 2
        assert "connections of ended threads reclaimed" in caplog.text
        database.close()  # this thread's connection back to the pool
        # the control: a thread that is still alive keeps its connection; the pool is full
        release = threading.Event()
        try:
            _hold_a_connection(database, release=release)
            _hold_a_connection(database, release=release)
            time.sleep(0.2)
            assert_503(answer(lambda: database.execute_sql("SELECT 1")), "database_unavailable")
        finally:
            release.set()
    finally:
        database.close_all()
