"""Throwaway PostgreSQL databases for a benchmark run, made the way the suite makes them
(tests/pg.py): an owner role that migrates, and a plain service role (not owner, not superuser,
not BYPASSRLS) that the app connects as. pgbench gets a database of its own on the same server,
so its tables never touch the app's.

`PMS_BENCH_PG_ADMIN_URL` (else `PMS_TEST_PG_ADMIN_URL`, else the local `postgres` role over
trust auth) names a role that may create databases and roles.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from urllib.parse import urlparse, urlunparse

import psycopg2

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url() -> str:
    return (os.environ.get("PMS_BENCH_PG_ADMIN_URL") or os.environ.get("PMS_TEST_PG_ADMIN_URL")
            or DEFAULT_ADMIN_URL)


def with_parts(url: str, *, user: str | None = None, password: str | None = None,
               dbname: str | None = None) -> str:
    """`url` with its user, password or database name replaced."""
    p = urlparse(url)
    name = user if user is not None else (p.username or "")
    secret = password if password is not None else (p.password or "")
    auth = name + (f":{secret}" if secret else "")
    netloc = f"{auth}@{p.hostname or '127.0.0.1'}:{p.port or 5432}"
    return urlunparse((p.scheme, netloc, "/" + (dbname or p.path.lstrip("/")), "", p.query, ""))


def _admin(dbname: str | None = None) -> psycopg2.extensions.connection:
    conn = psycopg2.connect(with_parts(admin_url(), dbname=dbname) if dbname else admin_url(),
                            connect_timeout=5)
    conn.autocommit = True
    return conn


@dataclass
class BenchDatabase:
    """The app's database (owner + service role) and pgbench's sibling database."""

    name: str
    owner: str
    app_role: str
    owner_url: str
    app_url: str
    pgbench_name: str

    @property
    def pgbench_url(self) -> str:
        return with_parts(self.owner_url, dbname=self.pgbench_name)

    def drop(self) -> None:
        conn = _admin()
        with conn.cursor() as cur:
            for name in (self.name, self.pgbench_name):
                cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
                cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cur.execute(f'DROP ROLE IF EXISTS "{self.app_role}"')
            cur.execute(f'DROP ROLE IF EXISTS "{self.owner}"')
        conn.close()


def create(prefix: str = "pmsbench") -> BenchDatabase:
    """Create the app database with its two roles and an empty pgbench database."""
    tag = uuid.uuid4().hex[:10]
    name, owner, app_role = f"{prefix}_{tag}", f"{prefix}_own_{tag}", f"{prefix}_app_{tag}"
    secret = uuid.uuid4().hex
    conn = _admin()
    with conn.cursor() as cur:
        cur.execute(f'CREATE ROLE "{owner}" LOGIN PASSWORD %s', (secret,))
        cur.execute(f'CREATE ROLE "{app_role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB '
                    f'NOCREATEROLE PASSWORD %s', (secret,))
        cur.execute(f'GRANT "{owner}" TO CURRENT_USER')
        cur.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        cur.execute(f'CREATE DATABASE "{name}_pgbench" OWNER "{owner}"')
    conn.close()
    for dbname in (name, f"{name}_pgbench"):
        conn = _admin(dbname)
        with conn.cursor() as cur:
            cur.execute(f'ALTER SCHEMA public OWNER TO "{owner}"')
            cur.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
        conn.close()
    return BenchDatabase(
        name=name, owner=owner, app_role=app_role,
        owner_url=with_parts(admin_url(), user=owner, password=secret, dbname=name),
        app_url=with_parts(admin_url(), user=app_role, password=secret, dbname=name),
        pgbench_name=f"{name}_pgbench",
    )
