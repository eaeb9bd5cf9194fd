"""Throwaway PostgreSQL databases for the test suite and the benchmarks (never used at run time).

Each gets its own owner role (which migrates) and a separate service role that is neither owner
nor superuser nor BYPASSRLS, exactly as production runs; sibling databases (pgbench's) may be
made beside it. `admin_url` names a role that may create databases and roles.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from urllib.parse import urlparse, urlunparse

import psycopg2


def with_parts(url: str, *, user: str | None = None, password: str | None = None,
               dbname: str | None = None) -> str:
    """`url` with its user, password or database name replaced."""
    p = urlparse(url)
    name = user if user is not None else (p.username or "")
    secret = password if password is not None else (p.password or "")
    auth = name + (f":{secret}" if secret else "")
    netloc = f"{auth}@{p.hostname or '127.0.0.1'}:{p.port or 5432}"
    return urlunparse((p.scheme, netloc, "/" + (dbname or p.path.lstrip("/")), "", p.query, ""))


def connect_admin(admin_url: str, dbname: str | None = None) -> psycopg2.extensions.connection:
    conn = psycopg2.connect(with_parts(admin_url, dbname=dbname) if dbname else admin_url,
                            connect_timeout=5)
    conn.autocommit = True
    return conn


def available(admin_url: str) -> tuple[bool, str]:
    try:
        connect_admin(admin_url).close()
        return True, ""
    except psycopg2.Error as exc:
        return False, str(exc).strip()


@dataclass
class ThrowawayDatabase:
    admin_url: str
    name: str
    owner: str
    app_role: str
    owner_url: str
    app_url: str
    siblings: list[str] = field(default_factory=list)

    def sibling_url(self, suffix: str) -> str:
        return with_parts(self.owner_url, dbname=f"{self.name}_{suffix}")

    def drop(self) -> None:
        conn = connect_admin(self.admin_url)
        with conn.cursor() as cur:
            for name in (self.name, *self.siblings):
                cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
                cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cur.execute(f'DROP ROLE IF EXISTS "{self.app_role}"')
            cur.execute(f'DROP ROLE IF EXISTS "{self.owner}"')
        conn.close()


def create(admin_url: str, prefix: str, *, siblings: tuple[str, ...] = ()) -> ThrowawayDatabase:
    """A fresh database with an owner role and a plain service role (+ empty siblings)."""
    tag = uuid.uuid4().hex[:10]
    name, owner, app_role = f"{prefix}_{tag}", f"{prefix}_own_{tag}", f"{prefix}_app_{tag}"
    secret = uuid.uuid4().hex
    names = [name, *(f"{name}_{suffix}" for suffix in siblings)]
    conn = connect_admin(admin_url)
    with conn.cursor() as cur:
        cur.execute(f'CREATE ROLE "{owner}" LOGIN PASSWORD %s', (secret,))
        cur.execute(f'CREATE ROLE "{app_role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB '
                    f'NOCREATEROLE PASSWORD %s', (secret,))
        cur.execute(f'GRANT "{owner}" TO CURRENT_USER')
        # membership lets a non-superuser admin (CI's throwaway role) end the service role's
        # backends, as the pool-recovery tests do
        cur.execute(f'GRANT "{app_role}" TO CURRENT_USER')
        for dbname in names:
            cur.execute(f'CREATE DATABASE "{dbname}" OWNER "{owner}"')
    conn.close()
    for dbname in names:
        conn = connect_admin(admin_url, dbname)
        with conn.cursor() as cur:
            cur.execute(f'ALTER SCHEMA public OWNER TO "{owner}"')
            cur.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
        conn.close()
    return ThrowawayDatabase(
        admin_url=admin_url, name=name, owner=owner, app_role=app_role,
        owner_url=with_parts(admin_url, user=owner, password=secret, dbname=name),
        app_url=with_parts(admin_url, user=app_role, password=secret, dbname=name),
        siblings=names[1:],
    )
