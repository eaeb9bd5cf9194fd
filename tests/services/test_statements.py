"""Statements compiled once per process (`pms.db.statements`): built once, tenant bound from the
scope, no id frozen into the text, both databases."""

from __future__ import annotations

import uuid

import peewee
import pytest

from pms.db.database import db, is_postgres
from pms.db.scope import tenant_scope
from pms.db.statements import Statement, param
from pms.db.uow import read_scope
from pms.models.property import RoomType
from tests.factories import make_property, make_room_type

pytestmark = pytest.mark.usefixtures("database")


def _room_types(calls: list[int]) -> Statement:
    def build() -> peewee.Node:
        calls.append(1)
        return (RoomType.select(RoomType.id, RoomType.code, RoomType.max_occupancy)
                .where((RoomType.env_id == param.env) & (RoomType.property == param.property_id))
                .order_by(RoomType.code))
    return Statement.build("test.room_types", build)


def test_a_statement_is_built_once_and_reused_with_new_values(ctx):
    calls: list[int] = []
    stmt = _room_types(calls)
    props = [make_property(ctx) for _ in range(3)]
    for i, prop in enumerate(props):
        for n in range(i + 1):
            make_room_type(ctx, prop.id, code=f"C{n}")
    with read_scope(ctx):
        counts = [len(stmt.rows(property_id=prop.id)) for prop in props]
        counts += [len(stmt.rows(property_id=prop.id)) for prop in props]
    assert counts == [1, 2, 3, 1, 2, 3]
    assert calls == [1]  # built once for this database kind


def test_a_statement_binds_the_env_from_the_scope_only(ctx, env_id):
    stmt = _room_types([])
    prop = make_property(ctx)
    make_room_type(ctx, prop.id, code="MINE")
    with read_scope(ctx):
        assert [r[1] for r in stmt.rows(property_id=prop.id)] == ["MINE"]
        with pytest.raises(TypeError, match="env slot"):
            stmt.rows(property_id=prop.id, env=uuid.uuid4())
    with tenant_scope(uuid.uuid4()):  # another env sees nothing of this one
        assert stmt.rows(property_id=prop.id) == []


def test_a_statement_built_inside_a_scope_does_not_freeze_that_env(ctx):
    """The builder runs unscoped: TenantModel.select() adds no filter of the env active when
    the statement happened to be compiled."""
    stmt = Statement.build("test.scoped_build", lambda: (
        RoomType.select(RoomType.code).where(RoomType.env_id == param.env)))
    with read_scope(ctx):
        compiled = stmt.compiled()
    assert [name for name, _ in compiled.slots] == ["env"]
    assert str(ctx.env_id) not in compiled.sql and ctx.env_id.hex not in compiled.sql


def test_a_statement_must_name_the_tenant_or_say_it_is_tenant_free(ctx):
    stmt = Statement.build("test.no_env", lambda: RoomType.select(RoomType.code))
    with read_scope(ctx), pytest.raises(RuntimeError, match="env_id"):
        stmt.rows()
    free = Statement.text("test.free", both="SELECT %(n)s + 1", tenant_free=True)
    with read_scope(ctx):
        assert free.one(n=41)[0] == 42


def test_a_statement_may_hold_no_id_constant(ctx):
    frozen = uuid.uuid4()
    stmt = Statement.build("test.frozen_id", lambda: (
        RoomType.select(RoomType.code)
        .where((RoomType.env_id == param.env) & (RoomType.property == frozen))))
    with read_scope(ctx), pytest.raises(RuntimeError, match="constant"):
        stmt.rows()


def test_a_text_statement_has_named_slots_and_literal_percent_signs(ctx):
    stmt = Statement.text("test.text", both=(
        "SELECT %(a)s, 'x%%y', %(b)s, %(a)s FROM room_type WHERE env_id = %(env)s LIMIT 1"))
    prop = make_property(ctx)
    make_room_type(ctx, prop.id)
    with read_scope(ctx):
        assert tuple(stmt.one(a=1, b="two")) == (1, "x%y", "two", 1)
    only_pg = Statement.text("test.only_pg", postgres="SELECT 1 WHERE %(env)s IS NOT NULL")
    with read_scope(ctx):
        if is_postgres():
            assert only_pg.rows() == [(1,)]
        else:
            with pytest.raises(RuntimeError, match="no SQL for sqlite"):
                only_pg.rows()


def test_typed_rows_convert_as_peewee_would(ctx):
    prop = make_property(ctx)
    rt = make_room_type(ctx, prop.id, code="T", max_occupancy=3)
    with read_scope(ctx):
        rows = _room_types([]).typed_rows(property_id=prop.id)
    assert rows == [(rt.id, "T", 3)] and isinstance(rows[0][0], uuid.UUID)


def test_a_statement_runs_with_the_tenant_set_for_row_level_security(ctx, backend):
    """On PostgreSQL every run carries app.env_id (RLS) besides the explicit env_id = %s."""
    if backend != "postgres":
        pytest.skip("row-level security is PostgreSQL's")
    stmt = Statement.text("test.rls", postgres=(
        "SELECT current_setting('app.env_id', true), %(env)s::text"))
    with read_scope(ctx):
        setting, bound = stmt.one()
        with db.atomic():  # and inside a transaction, after its deferred BEGIN
            in_txn = stmt.one()
    assert uuid.UUID(setting) == uuid.UUID(bound) == ctx.env_id
    assert tuple(in_txn) == (setting, bound)
