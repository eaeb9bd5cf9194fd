"""Throwaway PostgreSQL databases and roles for the suite (real server, no mocks).

`PMS_TEST_PG_ADMIN_URL` names a role that may create databases and roles (the machine's
`postgres` over trust auth by default; `.ci/run` makes a throwaway one). Each run gets its own
database, owned by its own owner role, with a separate service role that is neither owner nor
superuser nor BYPASSRLS, exactly as production runs (see pms.db.throwaway).
"""

from __future__ import annotations

import os
from typing import Any

from pms.db import throwaway
from pms.db.throwaway import ThrowawayDatabase as PgDatabase

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

__all__ = ["PgDatabase", "admin_url", "available", "backend_pid", "create_database",
           "terminate_backend"]


def admin_url() -> str:
    return os.environ.get("PMS_TEST_PG_ADMIN_URL", DEFAULT_ADMIN_URL)


def available() -> tuple[bool, str]:
    return throwaway.available(admin_url())


def create_database(prefix: str = "pmst") -> PgDatabase:
    """A fresh database with an owner role and a plain service role."""
    return throwaway.create(admin_url(), prefix)


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
