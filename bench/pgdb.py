"""Throwaway PostgreSQL databases for a benchmark run, made the way the suite makes them
(bench.throwaway): an owner role that migrates, and a plain service role that the app connects
as. pgbench gets a sibling database on the same server, so its tables never touch the app's.

`PMS_BENCH_PG_ADMIN_URL` (else `PMS_TEST_PG_ADMIN_URL`, else the local `postgres` role over
trust auth) names a role that may create databases and roles.
"""

from __future__ import annotations

import os

import psycopg2

from bench import throwaway
from bench.throwaway import ThrowawayDatabase as BenchDatabase

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

__all__ = ["BenchDatabase", "admin_url", "create", "pgbench_url"]


def admin_url() -> str:
    return (os.environ.get("PMS_BENCH_PG_ADMIN_URL") or os.environ.get("PMS_TEST_PG_ADMIN_URL")
            or DEFAULT_ADMIN_URL)


def _admin(dbname: str | None = None) -> psycopg2.extensions.connection:
    return throwaway.connect_admin(admin_url(), dbname)


def create(prefix: str = "pmsbench") -> BenchDatabase:
    """Create the app database with its two roles and an empty pgbench database."""
    return throwaway.create(admin_url(), prefix, siblings=("pgbench",))


def pgbench_url(database: BenchDatabase) -> str:
    return database.sibling_url("pgbench")
