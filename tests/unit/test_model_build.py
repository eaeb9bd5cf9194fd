"""`BaseModel.build` (peewee's constructor without a setattr per field) and the compiled write's
per-model plans (pms/db/base.py): the same row state and the same values peewee produces."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import peewee
import pytest

from pms.db import base
from pms.db.scope import tenant_scope
from pms.models import Property, Reservation, Room
from pms.models.platform import AuditEntry, IdempotencyRecord, OutboxEvent

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def _state(row):
    data = dict(row.__data__)
    for volatile in ("id", "created_at", "updated_at", "time", "next_attempt_at"):
        data.pop(volatile, None)  # defaults drawn per row (uuid4, now)
    return data, set(row._dirty), dict(row.__rel__)


@pytest.mark.parametrize("model, values", [
    (OutboxEvent, dict(type="hotel:pms:x:created", subject="s", partition=3, aggregate_type="x",
                       aggregate_version=1, property_id=uuid.uuid4(), idempotency_key="k",
                       data={"a": [1, 2]}, traceparent=None, request_id="r", time=NOW)),
    (AuditEntry, dict(action="x.created", target_type="X", target_id="t", property_id=None,
                      actor_sub="sub", actor_kind="staff", request_id=None,
                      before=None, after={"a": 1}, reason=None)),
    (IdempotencyRecord, dict(key="k", fingerprint="f", state="done", response_status=201,
                             response_body="{}", response_headers={"h": "v"},
                             expires_at=NOW, created_at=NOW, request_id="r")),
    (OutboxEvent, {}),
])
def test_build_makes_the_row_peewees_constructor_makes(model, values):
    built, constructed = model.build(**values), model(**values)
    assert type(built) is model
    assert _state(built) == _state(constructed)
    assert set(built.__data__) == set(constructed.__data__)
    assert built._dirty == set(built.__data__) == set(constructed._dirty)
    assert isinstance(built.id, uuid.UUID) and built.id != constructed.id


def test_build_stores_foreign_key_values_as_their_accessor_does():
    values = dict(env_id=uuid.uuid4(), property=uuid.uuid4(), room_type=uuid.uuid4(),
                  rate_plan=uuid.uuid4(), guest_profile=None, room=None,
                  confirmation_number="C", status="CONFIRMED", arrival_date=date(2026, 1, 1),
                  departure_date=date(2026, 1, 2), adults=2, version=1)
    built, constructed = Reservation.build(**values), Reservation(**values)
    assert _state(built) == _state(constructed)
    assert built.property_id == values["property"] and built.__rel__ == {}


def test_build_falls_back_to_peewee_for_anything_but_plain_columns():
    room = Room(id=uuid.uuid4(), room_number="101")
    built = Reservation.build(room=room)  # a row object: peewee's accessor keeps it
    assert built.__data__["room"] == room.id and built.__rel__["room"] is room
    aliased = Reservation.build(property_id=uuid.uuid4())  # the `_id` alias: peewee's
    assert aliased.__data__["property"] == aliased.property_id
    with pytest.raises(AttributeError):
        OutboxEvent.build(not_a_column=1).not_a_column_either  # noqa: B018
    assert OutboxEvent.build(not_a_column=1).not_a_column == 1  # as peewee's setattr does


def test_build_rows_are_changed_like_constructed_ones():
    row = AuditEntry.build(action="a", target_type="T", target_id="1", actor_sub="s",
                           actor_kind="k")
    row._dirty.clear()
    row.reason = "why"
    assert row.dirty_fields == [AuditEntry.reason]


VALUES = {"code": "C1", "name": "N", "timezone": "UTC", "currency_code": "EUR",
          "languages": ["en"], "display_address": {"city": "X"}}


def _peewee_values(row, names):
    return [row._meta.fields[n].db_value(row.__data__[n]) for n in names]


@pytest.mark.postgres
@pytest.mark.parametrize("inserting", [True, False])
def test_compiled_values_are_the_fields_db_values(pg_db, inserting):
    env = uuid.uuid4()
    row = Property(**VALUES, env_id=env)
    row.__data__["id"] = uuid.uuid4()
    with tenant_scope(env):
        sql, values, names = row._compiled_write(inserting)
    expected = _peewee_values(row, names)
    if not inserting:
        expected += [env.hex, row.id.hex]
        assert "id" not in names
    else:
        assert names == tuple(f.name for f in Property._meta.sorted_fields if f.name in row.__data__)
    assert values == expected
    assert sql == base._SAVE_SQL[(Property, inserting, True, names)]


def test_the_write_plan_converts_every_value_type_as_db_value_does():
    plans = base._WritePlans(OutboxEvent)
    samples = [None, "text", 7, True, 2.5, Decimal("1.5"), uuid.UUID(int=5), NOW,
               date(2026, 1, 1), b"by", {"a": 1}, "0" * 32]
    for name, passes, uuid_field, _convert in plans.columns.values():
        field = OutboxEvent._meta.fields[name]
        for value in samples:
            if type(value) in passes:
                assert field.db_value(value) is value, name
            elif uuid_field and type(value) is uuid.UUID:
                assert field.db_value(value) == value.hex
    # what passes unchanged never includes a type the field converts
    assert str not in dict((n, p) for n, p, _, _ in plans.columns.values())["aggregate_version"]
    assert int not in dict((n, p) for n, p, _, _ in plans.columns.values())["subject"]
    assert bool not in dict((n, p) for n, p, _, _ in plans.columns.values())["attempts"]


@pytest.mark.postgres
def test_an_expression_value_is_not_compiled(pg_db):
    env = uuid.uuid4()
    row = Property(**VALUES, env_id=env)
    row.__data__["id"] = uuid.uuid4()
    row.name = peewee.fn.UPPER("x")
    with tenant_scope(env):
        assert row._compiled_write(True) is None


@pytest.mark.postgres
def test_foreign_keys_to_uuid_keys_are_written_as_their_db_value(pg_db):
    env = uuid.uuid4()
    row = Reservation(env_id=env, property=uuid.uuid4(), room_type=str(uuid.uuid4()),
                      rate_plan=uuid.uuid4(), guest_profile=None, confirmation_number="C",
                      status="CONFIRMED", arrival_date=date(2026, 1, 1),
                      departure_date=date(2026, 1, 2), currency="EUR", version=1)
    row.__data__["id"] = uuid.uuid4()
    plans = base._WritePlans(Reservation)
    assert plans.columns["property"][2] and plans.columns["guest_profile"][2]  # UUID columns
    with tenant_scope(env):
        sql, values, names = row._compiled_write(True)
    assert values == _peewee_values(row, names)
    assert values[names.index("property")] == row.property_id.hex
    assert values[names.index("guest_profile")] is None
