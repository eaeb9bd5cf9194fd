"""No statement can run without the tenant setting: under the strict tenancy mode of
pms.db.database, every statement the API sends on PostgreSQL runs with `app.env_id` set, or on a
declared tenant-free path (`tenant_free()`, `unscoped()`). Driven from the route table: every
mutating route's recipe and every list route, through the app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pms.db.database import UnscopedStatement, db
from pms.db.scope import tenant_free, tenant_scope, unscoped
from pms.routes import all_routes, operations
from tests.api.recipes import RECIPES, World

pytestmark = pytest.mark.postgres


@pytest.fixture
def strict(backend: str, database: Any) -> Iterator[list[str]]:
    if backend != "postgres":
        pytest.skip("the tenant setting is PostgreSQL's (row-level security)")
    seen: list[str] = []
    database.strict_tenancy = seen.append
    try:
        yield seen
    finally:
        database.strict_tenancy = None


def test_strict_mode_catches_a_statement_without_a_tenant(strict):
    db.execute_sql("SELECT 1")
    with tenant_free():
        db.execute_sql("SELECT 2")
    with unscoped():
        db.execute_sql("SELECT 3")
    with tenant_scope(__import__("uuid").uuid4()), db.atomic():
        db.execute_sql("SELECT 4")
    with db.atomic():
        db.execute_sql("SELECT 5")
    assert strict == ["SELECT 1", "SELECT 5"]


def test_a_direct_cursor_outside_a_transaction_is_refused(strict):
    db.connect(reuse_if_open=True)
    with pytest.raises(UnscopedStatement):
        db.cursor()


def test_a_direct_cursor_first_in_a_transaction_carries_the_tenant(strict, ctx):
    with tenant_scope(ctx.env_id), db.atomic():
        cur = db.cursor()
        cur.execute("SELECT current_setting('app.env_id', true)")
        assert cur.fetchone()[0] == str(ctx.env_id)
    assert strict == []


def test_every_statement_of_the_api_runs_with_the_tenant_or_on_a_declared_path(api, strict):
    world = World(api)
    statuses: dict[str, int] = {}
    for (method, _path), recipe in sorted(RECIPES.items()):
        try:
            url, body = recipe(world)
        except Exception:  # noqa: BLE001 - a recipe whose set-up clashes with earlier ones
            continue
        statuses[f"{method} {url}"] = api.request(method, url, json=body).status_code
    for method, path, _fn, _spec in operations(all_routes()):
        if method == "GET" and "{" not in path.replace("{property_id}", ""):
            url = world.fill(path)
            statuses[f"GET {url}"] = api.get(url).status_code
    assert len(statuses) > 50
    assert strict == [], "statements without a tenant:\n" + "\n".join(strict[:20])
