"""PgBouncer in transaction mode hands each transaction any server connection, so our code may
leave no session state behind: no `SET` without `LOCAL`, no session `set_config`,
no `LISTEN`, no session advisory lock, no `WITH HOLD` cursor, no SQL `PREPARE`/`DEALLOCATE`.

The scan reads every string literal of pms/, workers/ and cli/ (docstrings excepted: they may
name what is forbidden) with `ast`, so SQL built in f-strings is read too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pms", "workers", "cli")

FORBIDDEN = {
    "SET without LOCAL": re.compile(r"(?:^|;)\s*SET\s+(?!LOCAL\b)(?:SESSION\s+)?[\w.]+\s*(?:=|TO\b)",
                                    re.I),
    "session set_config": re.compile(r"set_config\s*\([^)]*,\s*false\s*\)", re.I),
    "LISTEN": re.compile(r"(?:^|;)\s*LISTEN\s+\w", re.I),
    "session advisory lock": re.compile(r"pg_(?:try_)?advisory_lock(?:_shared)?\s*\(", re.I),
    "WITH HOLD cursor": re.compile(r"\bWITH\s+HOLD\b", re.I),
    "SQL PREPARE": re.compile(r"(?:^|;)\s*PREPARE\s+[\w{}]+\s*(?:\(|AS\b|{})", re.I),
    "SQL EXECUTE of a prepared statement": re.compile(r"(?:^|;)\s*EXECUTE\s+[\w{}]+\s*(?:\(|;|$)",
                                                      re.I),
    "DEALLOCATE": re.compile(r"\bDEALLOCATE\b", re.I),
}


def _docstrings(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _literals(source: str) -> list[tuple[int, str]]:
    """Every string literal (an f-string as its text with `{}` for each value) with its line."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    out: list[tuple[int, str]] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inner.add(id(value))
                parts.append(value.value if isinstance(value, ast.Constant) else "{}")
            out.append((node.lineno, "".join(str(p) for p in parts)))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in skip and id(node) not in inner):
            out.append((node.lineno, node.value))
    return out


def _withhold_cursors(source: str) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.keyword) and node.arg == "withhold"]


def violations(source: str) -> list[str]:
    found = []
    for line, text in _literals(source):
        for rule, pattern in FORBIDDEN.items():
            if pattern.search(text):
                found.append(f"{line}: {rule}: {text[:80]!r}")
    found += [f"{line}: WITH HOLD cursor: withhold=" for line in _withhold_cursors(source)]
    return found


def test_no_session_state_in_our_sql():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += [f"{path.relative_to(ROOT)}:{v}" for v in violations(path.read_text())]
    assert found == [], "session state sent by our code:\n" + "\n".join(found)


def test_the_scan_sees_every_kind_of_session_state():
    bad = '''
def f(db, cur, conn, env):
    db.execute_sql("SET lock_timeout = 100")
    db.execute_sql(f"SET statement_timeout TO {env}")
    db.execute_sql("SELECT 1; SET SESSION app.env_id = 'x'")
    db.execute_sql("SELECT set_config('app.env_id', %s, false)", (env,))
    db.execute_sql("LISTEN outbox")
    db.execute_sql("SELECT pg_advisory_lock(42)")
    db.execute_sql("DECLARE c CURSOR WITH HOLD FOR SELECT 1")
    db.execute_sql("PREPARE pms_begin (text) AS SELECT 1")
    db.execute_sql("EXECUTE pms_begin ('x')")
    db.execute_sql("DEALLOCATE pms_begin")
    conn.cursor(name="x", withhold=True)
'''
    rules = [v.split(": ")[1] for v in violations(bad)]
    assert sorted(set(rules)) == sorted(FORBIDDEN)
    assert rules.count("SET without LOCAL") == 3
    assert "WITH HOLD cursor" in rules


def test_the_scan_allows_what_is_transaction_local():
    good = '''
"""Docstrings may say: PREPARE x; SET foo = 1; LISTEN bar."""
def f(db, env):
    """SET lock_timeout = 1"""
    db.execute_sql("SET LOCAL lock_timeout = 100")
    db.execute_sql("SELECT set_config('app.env_id', %s, true)", (env,))
    db.execute_sql("UPDATE t SET n = n + 1 WHERE id = %s", (1,))
    db.execute_sql("SELECT pg_advisory_xact_lock(42)")
    raise ValueError("prepare the statements first")
'''
    assert violations(good) == []


def test_no_options_startup_parameter():
    """PgBouncer 1.18 refuses the `options` startup parameter: the timeouts are set per
    transaction instead, and a URL that carries `options` is refused at start-up."""
    import pytest

    from pms.db.database import make_database

    database = make_database("postgresql://app@127.0.0.1:5432/pms", statement_timeout_ms=1234)
    assert "options" not in database.connect_params
    assert database.statement_timeout_ms == 1234
    with pytest.raises(ValueError, match="options"):
        make_database("postgresql://app@127.0.0.1:5432/pms?options=-c%20statement_timeout%3D1")
