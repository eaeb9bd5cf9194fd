"""The PostgreSQL stored functions, one file each: pms/db/sql/<name>.sql holds a function's
current text, and that file is the truth.

A file is one `CREATE OR REPLACE FUNCTION <name>(...)` statement, unqualified (it lands in the
migrating connection's schema), under a header comment that says which rule the function
serves, where its reference implementation (the portable path SQLite takes) lives and which
test holds the two to the same answer. Migration 064 applies every file; `stored_function`
records each file's sha256 as it was applied, and tests/services/test_function_files.py checks
that the database's functions are the files', that each recorded hash is the file's now, and
that every `pms_*` function has a file and every file a function.

Changing a function:

1. edit its file;
2. add a migration that applies it again, queued with the migration's other operations
   (after a column the new text reads is added, say):

       from pms.db import function_files

       def migrate(migrator, database, *, fake=False):
           if isinstance(database, pw.PostgresqlDatabase):
               function_files.apply(migrator, database, "pms_take_nights")

A new function is a new file and a migration that applies it. An older migration keeps
the text it created: a fresh database replays it, and 064 and the later migrations bring each
function to its file. Since 064 applies today's files on a fresh database, a file's text must
be creatable at 064's point of the schema: PL/pgSQL bodies are checked when called, not when
created, so that holds for them (a `LANGUAGE sql` function would need the tables it reads).

PostgreSQL refuses `CREATE OR REPLACE` for a new result type or renamed parameters, and a new
argument list makes another function of the same name: `apply_now` drops the old one in those
cases, so one function of each name remains. Nothing depends on these functions (no trigger,
view or default calls one); a drop that something would block fails the migration loudly.

The text goes to the server as it is (no parameters, so a `%` in a file is not a placeholder).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import peewee

SQL_DIR = Path(__file__).parent / "sql"
TABLE = "stored_function"
_INVALID_FUNCTION_DEFINITION = "42P13"  # cannot change return type / parameter names


def names() -> list[str]:
    """Every function that has a file, sorted."""
    return sorted(path.stem for path in SQL_DIR.glob("*.sql"))


def text_of(name: str, directory: Path = SQL_DIR) -> str:
    path = directory / f"{name}.sql"
    if not path.is_file():
        raise LookupError(f"no stored function file {path}")
    return path.read_text(encoding="utf-8")


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def create_table_sql() -> str:
    return (f"CREATE TABLE IF NOT EXISTS {TABLE} (name text PRIMARY KEY, sha256 char(64) NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())")


def apply(migrator: Any, database: peewee.Database, name: str) -> None:
    """Queue the file of `name` with the migration's operations (a fake run applies nothing)."""
    text_of(name)  # a missing file fails while the migration is read, not halfway through
    migrator.run(apply_now, database, name)


def _overloads(cursor: Any, name: str) -> set[int]:
    cursor.execute("SELECT p.oid FROM pg_proc p WHERE p.proname = %s"
                   " AND p.pronamespace = current_schema()::regnamespace", (name,))
    return {row[0] for row in cursor.fetchall()}


def _drop(cursor: Any, oids: set[int]) -> None:
    for oid in sorted(oids):
        cursor.execute("SELECT %s::oid::regprocedure::text", (oid,))
        cursor.execute(f"DROP FUNCTION {cursor.fetchone()[0]}")


def apply_now(database: peewee.Database, name: str, directory: Path = SQL_DIR) -> str:
    """Create or replace `name` from its file and record the file's hash (PostgreSQL, inside
    the caller's transaction). Returns the hash."""
    text = text_of(name, directory)
    digest = sha256_of(text)
    cursor = database.cursor()
    before = _overloads(cursor, name)
    cursor.execute("SAVEPOINT pms_function_file")
    try:
        cursor.execute(text)
    except Exception as exc:
        if getattr(exc, "pgcode", None) != _INVALID_FUNCTION_DEFINITION:
            raise
        cursor.execute("ROLLBACK TO SAVEPOINT pms_function_file")
        _drop(cursor, before)
        before = set()
        cursor.execute(text)
    cursor.execute("RELEASE SAVEPOINT pms_function_file")
    after = _overloads(cursor, name)
    if after - before:  # a new argument list: the old function goes
        _drop(cursor, before)
    cursor.execute(create_table_sql())
    cursor.execute(
        f"INSERT INTO {TABLE} (name, sha256, applied_at) VALUES (%s, %s, now())"
        " ON CONFLICT (name) DO UPDATE SET sha256 = EXCLUDED.sha256, applied_at = now()",
        (name, digest))
    return digest


def recorded(database: peewee.Database) -> dict[str, str]:
    """Each applied function's recorded hash."""
    cursor = database.execute_sql(f"SELECT name, sha256 FROM {TABLE}")
    return {name: digest.strip() for name, digest in cursor.fetchall()}
