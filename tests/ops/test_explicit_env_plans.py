"""Queries carry `env_id = ...` themselves, not only through row-level security ("Keys
that shard"): with the keys `(env_id, id)` a lookup by id alone cannot probe its index, and a
router (Citus, partition pruning) needs the env in the statement.

Every statement the API sends (every mutating route's recipe, every list route: the route table,
as tests/ops/test_tenant_statements.py drives it; the booking, the search, check-in, check-out
and folio postings among them) is captured on PostgreSQL and planned again by the owner, for
whom row-level security does not apply (the owner, with FORCE lifted inside a rolled-back
transaction), with sequential scans disabled: each scan of a tenant
table must then probe an index on its `env_id` condition. A statement that found its env only
through the policy shows a sequential scan, or an index condition without env_id.
The `pms_*` functions are opaque here; their statements are checked on their keys by
tests/services/test_key_lookup_plans.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import psycopg2
import pytest

from bench.statements import count_statements
from pms.db.database import db
from pms.db.shard_keys import CROSS_ENV_BY_ID
from pms.routes import all_routes, operations
from tests.api.recipes import RECIPES, World

pytestmark = pytest.mark.postgres

_SCANS = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan")


@pytest.fixture
def captured(backend: str, database: Any) -> Iterator[list[tuple[str, Any]]]:
    if backend != "postgres":
        pytest.skip("row-level security and the shard keys are PostgreSQL's")
    seen: list[tuple[str, Any]] = []
    target = db.obj
    original = target.execute_sql

    def spy(sql, params=None):
        seen.append((sql, params))
        return original(sql, params)

    target.execute_sql = spy
    try:
        yield seen
    finally:
        del target.execute_sql


def _scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if node.get("Node Type") in _SCANS:
        yield node
    for child in node.get("Plans", ()):
        yield from _scans(child)


def _plannable(sql: str) -> bool:
    head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return (head in ("SELECT", "UPDATE", "DELETE", "INSERT", "WITH")
            and count_statements(sql) == 1 and "pms_" not in sql)


@contextmanager
def _planner(pg_database: Any) -> Iterator[Any]:
    """The owner's cursor, in a transaction rolled back at the end, with row-level security no
    longer FORCEd on the tenant tables (the owner then bypasses the policies) and sequential
    scans disabled: a plan shows which index conditions the statement itself gives."""
    conn = psycopg2.connect(pg_database.owner_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT table_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND column_name = 'env_id'")
            tenants = {row[0] for row in cur.fetchall()}
            for table in sorted(tenants):
                cur.execute(f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY')
            cur.execute("SET LOCAL enable_seqscan = off")
            yield SimpleNamespace(cur=cur, tenants=tenants)
    finally:
        conn.rollback()
        conn.close()


def _offence(planner: Any, sql: str, params: Any) -> str | None:
    """Why `sql` scans a tenant table without an env_id index condition (None: it does not)."""
    cur = planner.cur
    cur.execute("EXPLAIN (FORMAT JSON) " + sql, params)
    plan = cur.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    for scan in _scans(plan[0]["Plan"]):
        if scan.get("Relation Name") not in planner.tenants:
            continue
        cond = scan.get("Index Cond") or scan.get("Recheck Cond") or ""
        if scan.get("Index Name") == f"{scan['Relation Name']}_id_idx" and (
                scan["Relation Name"] in CROSS_ENV_BY_ID and "env_id" in scan.get("Filter", "")):
            # the journals' cross-env index on id: the planner may take it for a statement that
            # names both keys; the statement still gives its env (the router's shard key)
            continue
        if "env_id" not in cond:
            return (f"{scan['Node Type']} on {scan['Relation Name']} "
                    f"({scan.get('Index Name', 'no index')}): {cond}")
    return None


@pytest.fixture
def planner(pg_database: Any) -> Iterator[Any]:
    with _planner(pg_database) as it:
        yield it


def test_a_lookup_without_the_env_is_caught(planner):
    """The control: by id alone (the env left to the policy) the key cannot be probed."""
    some = "00000000-0000-0000-0000-000000000001"
    assert _offence(planner, 'SELECT * FROM "reservation" WHERE "id" = %s', (some,))
    assert _offence(planner, 'SELECT r.id FROM "reservation" r JOIN "room" m '
                             'ON m.id = r.room_id WHERE r.env_id = %s', (some,))
    assert _offence(planner, 'SELECT * FROM "reservation" WHERE "env_id" = %s AND "id" = %s',
                    (some, some)) is None
    # a journal's id index serves a lookup by id; without the env in the statement it is caught
    assert _offence(planner, 'SELECT * FROM "audit_entry" WHERE "id" = %s', (some,))
    assert _offence(planner, 'UPDATE "audit_entry" SET "reason" = %s WHERE "env_id" = %s '
                             'AND "id" = %s', ("x", some, some)) is None


def test_every_statement_of_the_api_probes_its_tables_by_env(api, captured, pg_database):
    world = World(api)
    for (method, _path), recipe in sorted(RECIPES.items()):
        try:
            url, body = recipe(world)
        except Exception:  # noqa: BLE001 - a recipe whose set-up clashes with earlier ones
            continue
        api.request(method, url, json=body)
    for method, path, _fn, _spec in operations(all_routes()):
        if method == "GET" and "{" not in path.replace("{property_id}", ""):
            api.get(world.fill(path))
    statements = {(sql, repr(params)): (sql, params) for sql, params in captured
                  if _plannable(sql)}
    assert len(statements) > 100
    offending = {}
    with _planner(pg_database) as planner:
        for sql, params in statements.values():
            why = _offence(planner, sql, params)
            if why:
                offending[sql] = why
    assert not offending, "statements whose scans do not probe env_id:\n" + "\n".join(
        f"  {why}\n    {sql[:300]}" for sql, why in offending.items())
