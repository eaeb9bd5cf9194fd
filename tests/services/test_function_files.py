"""The stored functions' files are the truth (pms.db.function_files, migration 064), on the
suite's migrated PostgreSQL database:

- each `pms_*` function in the database is what creating its file's text gives: the file is
  created in a scratch schema and both definitions are compared as PostgreSQL prints them
  (`pg_get_functiondef`: arguments, result, volatility, settings and body), and the hash
  `stored_function` recorded is the file's now; altering a temp copy's body or its header
  is caught (the controls);
- every `pms_*` function has a file, every file a function, and each name one function;
- applying a file again replaces its function, also when the result type or the arguments
  change (one function of the name remains).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from pms.db import function_files

pytestmark = [pytest.mark.postgres]

PROBE = "pms_function_probe"


@pytest.fixture
def owner(pg_database: Any) -> Iterator[Any]:
    """The migrating role's connection, in a transaction rolled back at the end."""
    conn = psycopg2.connect(pg_database.owner_url)
    try:
        yield conn
    finally:
        conn.rollback()
        conn.close()


def _definition(cur: Any, schema: str, name: str) -> str:
    cur.execute("SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n"
                " ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = %s",
                (schema, name))
    rows = cur.fetchall()
    assert len(rows) == 1, f"{schema}.{name}: {len(rows)} functions"
    return rows[0][0].replace(f"FUNCTION {schema}.", "FUNCTION ", 1)


def differences(conn: Any, directory: Path) -> list[str]:
    """The functions whose database text is not their file's, or whose recorded hash is not
    their file's hash now (each with what differs)."""
    cur = conn.cursor()
    cur.execute("SELECT name, sha256 FROM stored_function")
    hashes = {name: digest for name, digest in cur.fetchall()}
    found = []
    for path in sorted(directory.glob("*.sql")):
        name, text = path.stem, path.read_text(encoding="utf-8")
        cur.execute("SAVEPOINT probe")
        cur.execute(f"CREATE SCHEMA {PROBE}")
        # the file's unqualified name lands in the probe schema; the tables' row types it
        # names resolve to public's, and both definitions print under the same path
        cur.execute(f"SET LOCAL search_path = {PROBE}, public")
        cur.execute(text)
        if _definition(cur, PROBE, name) != _definition(cur, "public", name):
            found.append(f"{name}: text")
        cur.execute("ROLLBACK TO SAVEPOINT probe")
        if hashes.get(name) != function_files.sha256_of(text):
            found.append(f"{name}: hash")
    return found


def test_each_function_is_its_file_and_its_recorded_hash_the_files(owner):
    assert differences(owner, function_files.SQL_DIR) == []


def test_a_changed_body_or_header_is_caught(owner, tmp_path):
    copy = tmp_path / "sql"
    shutil.copytree(function_files.SQL_DIR, copy)
    body = copy / "pms_take_nights.sql"
    text = body.read_text()
    assert "greatest(c.held, 0)" in text
    body.write_text(text.replace("greatest(c.held, 0)", "greatest(c.held, 1)"))
    header = copy / "pms_profile_refs.sql"
    header.write_text(header.read_text().replace("-- pms_profile_refs\n", "-- profiles\n", 1))
    assert differences(owner, copy) == ["pms_profile_refs: hash", "pms_take_nights: text",
                                        "pms_take_nights: hash"]


def test_every_function_has_a_file_and_every_file_a_function(owner):
    cur = owner.cursor()
    cur.execute("SELECT p.proname, count(*) FROM pg_proc p JOIN pg_namespace n"
                " ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
                " AND p.proname LIKE 'pms\\_%' GROUP BY p.proname ORDER BY p.proname")
    functions = dict(cur.fetchall())
    assert sorted(functions) == function_files.names()
    assert {name for name, count in functions.items() if count != 1} == set()
    cur.execute("SELECT name FROM stored_function ORDER BY name")
    assert [row[0] for row in cur.fetchall()] == function_files.names()
    assert len(functions) >= 13  # the control: the lists are read, not empty


def _probe_functions(cur: Any) -> list[str]:
    cur.execute("SELECT pg_get_function_identity_arguments(p.oid) || ' -> '"
                " || pg_get_function_result(p.oid) FROM pg_proc p JOIN pg_namespace n"
                " ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = 'pms_probe'",
                (PROBE,))
    return [row[0] for row in cur.fetchall()]


def test_applying_a_file_again_replaces_the_function_whatever_changed(owner, tmp_path):
    cur = owner.cursor()
    cur.execute(f"CREATE SCHEMA {PROBE}")
    cur.execute(f"SET LOCAL search_path = {PROBE}, public")
    path = tmp_path / "pms_probe.sql"
    versions = [
        ("(a integer) RETURNS integer", "a integer -> integer"),
        ("(a integer) RETURNS text", "a integer -> text"),  # PostgreSQL refuses to replace it
        ("(a integer, b text) RETURNS text", "a integer, b text -> text"),  # another overload
        ("(a integer, b text) RETURNS text", "a integer, b text -> text"),  # the same again
    ]
    for signature, shown in versions:
        path.write_text("-- a probe\nCREATE OR REPLACE FUNCTION pms_probe" + signature
                        + " LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;\n")
        digest = function_files.apply_now(owner, "pms_probe", tmp_path)
        assert _probe_functions(cur) == [shown]
        cur.execute(f"SELECT sha256 FROM {PROBE}.stored_function WHERE name = 'pms_probe'")
        assert cur.fetchone()[0] == digest == function_files.sha256_of(path.read_text())


def test_a_missing_file_fails_the_migration_when_it_is_read():
    with pytest.raises(LookupError):
        function_files.apply(None, None, "pms_no_such_function")
