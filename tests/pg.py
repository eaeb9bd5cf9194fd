"""Throwaway PostgreSQL databases and roles for the suite (real server, no mocks).

`PMS_TEST_PG_ADMIN_URL` names a role that may create databases and roles (the machine's
`postgres` over trust auth by default; `.ci/run` makes a throwaway one). Each run gets its own
database, owned by its own owner role, with a separate service role that is neither owner nor
superuser nor BYPASSRLS, exactly as production runs (see bench.throwaway).

`PMS_TEST_VIA_PGBOUNCER=1` (the second pass of `.ci/run`) routes the service role's URL
(`app_url`, what the app and the services use) through one PgBouncer in transaction mode
started for the run (tests/ops/pgbouncer.py); the owner URL, which migrates, and admin work stay
direct, as production runs migrations around the pooler.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench import throwaway
from bench.throwaway import ThrowawayDatabase as PgDatabase

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

__all__ = ["PgDatabase", "admin_url", "available", "backend_pid", "create_database",
           "migrated_database", "terminate_backend"]


def admin_url() -> str:
    return os.environ.get("PMS_TEST_PG_ADMIN_URL", DEFAULT_ADMIN_URL)


def available() -> tuple[bool, str]:
    return throwaway.available(admin_url())


def via_pgbouncer() -> bool:
    return os.environ.get("PMS_TEST_VIA_PGBOUNCER", "").lower() in ("1", "true", "yes")


_bouncer: Any = None
_bouncer_lock = threading.Lock()


def pgbouncer() -> Any:
    """The run's PgBouncer (started on first use, stopped when the test process exits)."""
    global _bouncer
    with _bouncer_lock:
        if _bouncer is None:
            from tests.ops.pgbouncer import PgBouncer

            pool = int(os.environ.get("PMS_TEST_PGBOUNCER_POOL", "4"))
            _bouncer = PgBouncer(admin_url(), pool_size=pool).start()
            atexit.register(_bouncer.stop)
        return _bouncer


def create_database(prefix: str = "pmst") -> PgDatabase:
    """A fresh database with an owner role and a plain service role (the service role through
    PgBouncer when `PMS_TEST_VIA_PGBOUNCER` is set)."""
    database = throwaway.create(admin_url(), prefix)
    if via_pgbouncer():
        database = dataclasses.replace(database, app_url=pgbouncer().route(database.app_url))
    return database


@contextmanager
def migrated_database(prefix: str) -> Iterator[PgDatabase]:
    """A database of a test module's own, migrated, dropped at the end (direct, never through
    PgBouncer): for measures that must not depend on what other tests left in the shared one.
    Without a server the test skips, or fails in CI (tests.conftest.need_server)."""
    from pms.db.migrator import migrate
    from tests.conftest import need_server

    ok, why = available()
    need_server(ok, "PostgreSQL", why)
    database = throwaway.create(admin_url(), prefix)
    try:
        migrate(database.owner_url, service_url=database.app_url)
        yield database
    finally:
        database.drop()


def backend_pid(database: Any) -> int:
    """The PostgreSQL backend serving `database`'s connection in this thread."""
    return database.execute_sql("SELECT pg_backend_pid()").fetchone()[0]


def terminate_backend(pid: int) -> None:
    """Kill a backend from an admin connection, as a server restart or a network cut would."""
    import psycopg2

    conn = psycopg2.connect(admin_url())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
    conn.close()
