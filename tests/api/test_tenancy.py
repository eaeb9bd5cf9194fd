"""Tenancy, twice: the ORM refuses unscoped queries, another env's rows answer 404 on every
id-bearing route, and PostgreSQL row-level security alone (ORM filter off) still hides and
refuses another env's rows."""

from __future__ import annotations

import re
import uuid

import peewee
import pytest

from pms.db.database import db
from pms.db.scope import ScopeError, tenant_scope, unscoped
from pms.models import ALL_MODELS, Profile, Property
from pms.routes import all_routes, operations
from tests.api.recipes import RECIPES, World
from tests.helpers import RawBody


def test_tenant_model_refuses_a_query_without_scope(database):
    with pytest.raises(ScopeError):
        Property.select().count()
    with pytest.raises(ScopeError):
        Property.update(name="x").execute()
    with pytest.raises(ScopeError):
        Property.delete().execute()
    with pytest.raises(ScopeError):
        Property.create(code="X", name="x", timezone="UTC", currency_code="EUR")


def test_tenant_model_refuses_to_write_a_row_for_another_env(database):
    with tenant_scope(uuid.uuid4()), db.atomic():
        with pytest.raises(PermissionError):
            Property.create(env_id=uuid.uuid4(), code="X", name="x", timezone="UTC",
                            currency_code="EUR")


ID_ROUTES = sorted({(m, p) for m, p, _f, _s in operations(all_routes()) if "{" in p})
# create-or-replace by a code the caller names, env-wide: in another env the same URL makes
# that env's own entry (201), never replaces the owner's (200)
BY_CODE = {("PUT", "/v1/lov/{list}/{code}"), ("PUT", "/v1/settings/external-systems/{code}"),
           ("PUT", "/v1/admin/settings/settings/external-systems/{code}"),  # the aliases
           ("PUT", "/v1/admin/lov/lov/{list}/{code}")}


@pytest.mark.parametrize("method,path", ID_ROUTES, ids=[f"{m} {p}" for m, p in ID_ROUTES])
def test_another_envs_ids_answer_404_on_every_id_bearing_route(api, method, path):
    owner_world = World(api)
    intruder = api.for_env(uuid.uuid4())
    recipe = RECIPES.get((method, path))
    if recipe is not None:
        url, body = recipe(owner_world)
    else:
        ids = {"id": owner_world.room_type_id}
        for name in re.findall(r"\{(\w+)\}", path):
            ids.setdefault(name, owner_world.property_id)
        url, body = owner_world.fill(path, ids), None
        if method != "GET":
            pytest.fail(f"no recipe for {method} {path}")
    if isinstance(body, RawBody):  # the intruder's own token, whatever the recipe's caller
        body = RawBody(body.data, json=body.json,
                       headers={k: v for k, v in body.headers.items() if k != "Authorization"})
    resp = intruder.request(method, url, json=body)
    if (method, path) in BY_CODE:
        assert resp.status_code == 201, (url, resp.status_code, resp.text)
        return
    assert resp.status_code == 404, (url, resp.status_code, resp.text)
    assert resp.json["code"] == "not_found"


def test_lists_never_show_another_envs_rows(api):
    World(api)
    other = api.for_env(uuid.uuid4())
    assert other.get("/v1/properties").json["data"] == []


# -- row-level security with the ORM filter switched off --------------------------------------

@pytest.mark.postgres
def test_rls_alone_hides_and_refuses_another_envs_rows(pg_db):
    env_a, env_b = uuid.uuid4(), uuid.uuid4()
    with tenant_scope(env_a), db.atomic():
        Property.create(code="RLS-A", name="A", timezone="UTC", currency_code="EUR")
    with tenant_scope(env_b), db.atomic():
        prop_b = Property.create(code="RLS-B", name="B", timezone="UTC", currency_code="EUR")
    # Given the database's app.env_id is env A and the ORM filter is OFF
    with tenant_scope(env_a), unscoped(), db.atomic():
        rows = list(Property.select())
        # Then RLS alone returns no row of env B
        assert {r.env_id for r in rows} == {env_a}
        assert Property.select().where(Property.id == prop_b.id).first() is None
        # and updates/deletes of env B's row touch nothing
        assert Property.update(name="hijacked").where(Property.id == prop_b.id).execute() == 0
        assert Property.delete().where(Property.id == prop_b.id).execute() == 0
    # and it refuses to write a row for env B
    with tenant_scope(env_a), unscoped():
        with pytest.raises(peewee.ProgrammingError, match="row-level security"):
            with db.atomic():
                Profile.insert(env_id=env_b, id=uuid.uuid4(), kind="GUEST", last_name="x",
                               preferences={}, version=0).execute()
    with tenant_scope(env_b), db.atomic():
        assert Property.get_by_id(prop_b.id).name == "B"


@pytest.mark.postgres
def test_without_a_tenant_the_database_shows_nothing(pg_db):
    with tenant_scope(uuid.uuid4()), db.atomic():
        Property.create(code="RLS-N", name="N", timezone="UTC", currency_code="EUR")
    with unscoped(), db.atomic():  # no app.env_id at all
        assert Property.select().count() == 0


@pytest.mark.postgres
def test_service_role_is_not_owner_superuser_or_bypassrls(pg_database, pg_db):
    row = db.execute_sql(
        "SELECT rolsuper, rolbypassrls, current_user FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    assert row[0] is False and row[1] is False
    owners = {r[0] for r in db.execute_sql(
        "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert row[2] not in owners


@pytest.mark.postgres
def test_every_tenant_table_has_forced_rls_with_a_checked_policy(pg_db):
    tables = {m._meta.table_name for m in ALL_MODELS}
    rows = db.execute_sql("""
        SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
               p.qual IS NOT NULL AS has_using, p.with_check IS NOT NULL AS has_check,
               coalesce(p.qual, '') AS qual
        FROM pg_class c LEFT JOIN pg_policies p ON p.tablename = c.relname
        WHERE c.relname = ANY(%s)""", (list(tables),)).fetchall()
    seen = {r[0] for r in rows}
    assert seen == tables
    for name, enabled, forced, has_using, has_check, qual in rows:
        assert enabled and forced and has_using and has_check, name
        assert "app.env_id" in qual, name


def test_every_index_on_tenant_tables_leads_with_env_id():
    for model in ALL_MODELS:
        for fields, _unique in model._meta.indexes:
            assert fields[0] == "env_id", (model.__name__, fields)
        for field in model._meta.sorted_fields:
            assert not field.unique, (model.__name__, field.name, "unique without env_id")
            assert not field.index, (model.__name__, field.name,
                                     "single-column index without env_id (FKs: index=False)")


@pytest.mark.postgres
def test_every_index_in_the_database_leads_with_env_id(pg_db):
    rows = db.execute_sql("""
        SELECT i.indexrelid::regclass::text, a.attname
        FROM pg_index i
        JOIN pg_class t ON t.oid = i.indrelid
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]
        WHERE NOT i.indisprimary AND t.relnamespace = 'public'::regnamespace
          AND EXISTS (SELECT 1 FROM pg_attribute e WHERE e.attrelid = t.oid
                      AND e.attname = 'env_id')""").fetchall()
    assert rows
    # Declared exceptions, each for cross-env machinery that never serves a tenant's query: the
    # outbox relay claims due rows of every env in creation order (migration 010); on a sharded
    # database it runs per shard, where the index is still local. Its reactions' cursor reads the
    # rows of every env whose reactions have not run yet, the same way (migration 021). The
    # relay and the audit push mark the rows they claimed by id across envs; with the keys
    # (env_id, id) (migration 038) those marks keep a plain index on id.
    cross_env = {"outbox_event_due_idx", "outbox_event_reactions_idx", "outbox_event_id_idx",
                 "audit_entry_id_idx"}
    offenders = [name for name, first in rows if first != "env_id" and name not in cross_env]
    assert not offenders, offenders


def test_every_table_has_env_id_not_null():
    for model in ALL_MODELS:
        field = model._meta.fields.get("env_id")
        assert field is not None and not field.null, model.__name__
