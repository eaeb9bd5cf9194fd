"""One rule for `updated_at` (pms.db.stamping): every UPDATE of a row of a
table that has the column stamps it, whichever way it is written. Each test fails when a write
path skips it: a peewee bulk UPDATE (the night audit's rooms, the inventory's days), a compiled
statement, an SQL text in the code, a PL/pgSQL function of the migrated database."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pms
from pms.db.database import db, is_postgres
from pms.db.scope import tenant_scope, unscoped
from pms.db.stamping import UNSTAMPED_TABLES, stamped_tables, unstamped_updates
from pms.db.statements import Statement
from pms.db.uow import read_scope
from pms.db.versioned import VersionedRows
from pms.models import InventoryDay, Room
from pms.services.night_audit.end_of_day import run_night_audit
from tests.factories import make_booking_hotel, make_checked_in, make_reservation, reservation_body
from tests.helpers import EOD_OVERRIDE

PMS = Path(pms.__file__).parent
ANCIENT = datetime(2001, 1, 1, tzinfo=UTC)


def _all_pms_modules() -> list[object]:
    out = []
    for info in pkgutil.walk_packages([str(PMS)], "pms."):
        if ".migrations." in info.name or info.name.endswith("gunicorn_conf"):
            continue
        out.append(importlib.import_module(info.name))
    return out


def _stamping_models() -> list[type]:
    from pms.db.base import BaseModel

    found, stack = [], list(BaseModel.__subclasses__())
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        if "updated_at" in model._meta.fields and model._meta.table_name not in UNSTAMPED_TABLES:
            found.append(model)
    return found


def test_the_rule_covers_the_domain_tables():
    _all_pms_modules()
    tables = stamped_tables()
    assert {"room", "inventory_day", "reservation", "folio", "rate_schedule", "rate_plan",
            "property", "job"} <= tables
    assert not tables & UNSTAMPED_TABLES


def test_a_bulk_update_of_every_stamping_model_sets_updated_at(database):
    _all_pms_modules()
    models = _stamping_models()
    assert len(models) >= 20
    for model in models:
        # a versioned model's own update() refuses to build outside a unit of work that moves
        # its owner's version (pms.db.versioned): build past that guard, through the stamping
        update = (super(VersionedRows, model).update if issubclass(model, VersionedRows)
                  else model.update)
        with unscoped():
            sql, _ = update(created_at=ANCIENT).where(model.id == uuid.uuid4()).sql()
        assert '"updated_at" = ' in sql, (model.__name__, sql)
    # the caller's own value wins
    with unscoped():
        sql, params = Room.update(updated_at=ANCIENT).sql()
    assert sql.count('"updated_at"') == 1 and len(params) == 1


def test_every_compiled_statement_of_the_code_passes_the_rule(database):
    """Compiling checks it (a builder's UPDATE without updated_at raises, a text's too): every
    Statement the code defines compiles for this backend."""
    statements = {id(v): v for m in _all_pms_modules() for v in vars(m).values()
                  if isinstance(v, Statement)}
    assert len(statements) >= 20
    for statement in statements.values():
        try:
            statement.compiled()
        except RuntimeError as exc:
            if "has no SQL for" in str(exc):  # a text for the other database only
                continue
            raise


def test_a_compiled_update_without_updated_at_is_refused(database):
    from pms.db.statements import param

    built = Statement.build(f"t.bad_{uuid.uuid4().hex}", lambda: (
        Room.update(hk_status=param.hk).where((Room.env_id == param.env) & (Room.id == param.id))))
    with pytest.raises(RuntimeError, match="updated_at"):
        built.compiled()
    text = Statement.text(f"t.bad_{uuid.uuid4().hex}",
                          both="UPDATE room SET hk_status = %(hk)s WHERE env_id = %(env)s")
    with pytest.raises(RuntimeError, match="updated_at"):
        text.compiled()


def test_no_sql_text_in_the_code_updates_a_stamped_table_without_updated_at():
    _all_pms_modules()
    tables = stamped_tables()
    found = []
    for path in PMS.rglob("*.py"):
        if "migrations" in path.parts:
            continue  # superseded function bodies; the live ones are checked in the database
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                bad = unstamped_updates(node.value, tables)
                if bad:
                    found.append((str(path.relative_to(PMS)), node.lineno, bad))
    assert found == []


def test_no_function_of_the_migrated_database_skips_updated_at(ctx, database):
    if not is_postgres():
        pytest.skip("the functions are PostgreSQL's")
    _all_pms_modules()
    with read_scope(ctx):
        rows = db.execute_sql(
            "SELECT p.proname, p.prosrc FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE 'pms\\_%%'").fetchall()
    assert any(name == "pms_take_nights" for name, _ in rows)
    bad = {name: unstamped_updates(src) for name, src in rows if unstamped_updates(src)}
    assert bad == {}


def _age(ctx, model, where):
    with tenant_scope(ctx.env_id), db.atomic():
        model.update(updated_at=ANCIENT).where(where).execute()


def test_the_night_audit_stamps_the_rooms_it_marks_dirty(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=3)
    stay = make_checked_in(ctx, hotel)
    room_id = stay.room_id
    _age(ctx, Room, Room.property == hotel.id)
    with read_scope(ctx):
        assert Room.get_by_id(room_id).updated_at == ANCIENT
    before = datetime.now(UTC) - timedelta(seconds=5)
    run_night_audit(ctx, hotel.id, override_reason=EOD_OVERRIDE)
    with read_scope(ctx):
        room = Room.get_by_id(room_id)
    assert room.hk_status == "DIRTY"
    assert room.updated_at > before


def test_inventory_bulk_writes_stamp_the_days(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=3)
    days = InventoryDay.property_id == hotel.id
    _age(ctx, InventoryDay, days)
    before = datetime.now(UTC) - timedelta(seconds=5)
    resp = api.put(f"/v1/properties/{hotel.id}/inventory", {
        "room_type_id": str(hotel.room_type.id), "from_date": hotel.today.isoformat(),
        "to_date": (hotel.today + timedelta(days=3)).isoformat(), "sell_limit": 2})
    assert resp.status_code == 200, resp.text
    with read_scope(ctx):
        limited = list(InventoryDay.select().where(days & InventoryDay.sell_limit.is_null(False)))
    assert len(limited) >= 3 and all(d.updated_at > before for d in limited)
    # the booking's take of its nights (PostgreSQL: pms_take_nights; SQLite: a peewee UPDATE)
    _age(ctx, InventoryDay, days)
    booked = api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel))
    assert booked.status_code == 201, booked.text
    with read_scope(ctx):
        taken = list(InventoryDay.select().where(days & (InventoryDay.sold > 0)))
    assert len(taken) == 2 and all(d.updated_at > before for d in taken)
    make_reservation(ctx, hotel)  # (the factory path writes through the same take)
