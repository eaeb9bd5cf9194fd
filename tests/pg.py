"""Throwaway PostgreSQL databases and roles for the suite (real server, no mocks).

`PMS_TEST_PG_ADMIN_URL` names a role that may create databases and roles (the machine's
`postgres` over trust auth by default; `.ci/run` makes a throwaway one). Each run gets its own
database, owned by its own owner role, with a separate service role that is neither owner nor
superuser nor BYPASSRLS, exactly as production runs.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from urllib.parse import urlparse, urlunparse

import psycopg2

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url() -> str:
    return os.environ.get("PMS_TEST_PG_ADMIN_URL", DEFAULT_ADMIN_URL)


def _with(url: str, *, user: str | None = None, password: str | None = None,
          dbname: str | None = None) -> str:
    p = urlparse(url)
    netloc_user = user if user is not None else (p.username or "")
    pw = password if password is not None else (p.password or "")
    auth = netloc_user + (f":{pw}" if pw else "")
    host = p.hostname or "127.0.0.1"
    port = p.port or 5432
    return urlunparse((p.scheme, f"{auth}@{host}:{port}", "/" + (dbname or p.path.lstrip("/")),
                       "", p.query, ""))


def available() -> tuple[bool, str]:
    try:
        conn = psycopg2.connect(admin_url(), connect_timeout=3)
        conn.close()
        return True, ""
    except psycopg2.Error as exc:
        return False, str(exc).strip()


@dataclass
class PgDatabase:
    name: str
    owner: str
    app_role: str
    owner_url: str
    app_url: str

    def drop(self) -> None:
        conn = psycopg2.connect(admin_url())
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> pg_backend_pid()", (self.name,))
            cur.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
            cur.execute(f'DROP ROLE IF EXISTS "{self.app_role}"')
            cur.execute(f'DROP ROLE IF EXISTS "{self.owner}"')
        conn.close()


def create_database(prefix: str = "pmst") -> PgDatabase:
    """A fresh database with an owner role and a plain service role."""
    tag = uuid.uuid4().hex[:10]
    name, owner, app_role = f"{prefix}_{tag}", f"{prefix}_own_{tag}", f"{prefix}_app_{tag}"
    secret = uuid.uuid4().hex
    conn = psycopg2.connect(admin_url())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'CREATE ROLE "{owner}" LOGIN PASSWORD %s', (secret,))
        cur.execute(f'CREATE ROLE "{app_role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB '
                    f'NOCREATEROLE PASSWORD %s', (secret,))
        cur.execute(f'GRANT "{owner}" TO CURRENT_USER')
        # membership lets a non-superuser admin (CI's throwaway role) end the service role's
        # backends, as the pool-recovery tests do
        cur.execute(f'GRANT "{app_role}" TO CURRENT_USER')
        cur.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
    conn.close()
    conn = psycopg2.connect(_with(admin_url(), dbname=name))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'ALTER SCHEMA public OWNER TO "{owner}"')
        cur.execute('REVOKE ALL ON SCHEMA public FROM PUBLIC')
    conn.close()
    return PgDatabase(
        name=name, owner=owner, app_role=app_role,
        owner_url=_with(admin_url(), user=owner, password=secret, dbname=name),
        app_url=_with(admin_url(), user=app_role, password=secret, dbname=name),
    )
