"""The one hydration of a hand-written read (`TenantModel.from_columns`, pms.db.base.RowPlan)
builds the object peewee's own read builds, on SQLite and PostgreSQL: for rows of several models
with random contents (nulls, notes, money, dates, JSON), every field's value and type equal
what `Model.get` returns. A control shows the comparison sees a wrong conversion."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from pms.db.base import RowPlan
from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import Folio, Profile, Reservation, Room
from tests.factories import make_booking_hotel, make_profile, make_reservation

pytestmark = pytest.mark.usefixtures("database")


def _raw(model, row_id):
    """The row's columns in `sorted_fields` order as the driver returns them."""
    columns = ", ".join(f'"{f.column_name}"' for f in model._meta.sorted_fields)
    table = model._meta.table_name
    mark = db.obj.param  # the driver's placeholder
    value = model.id.db_value(row_id)
    return db.execute_sql(f'SELECT {columns} FROM "{table}" WHERE id = {mark}',
                          (value,)).fetchone()


def _same(model, row_id, build=None):
    built = (build or model.from_columns)(_raw(model, row_id))
    read = model.get_by_id(row_id)
    for field in model._meta.sorted_fields:
        ours, theirs = built.__data__.get(field.name), read.__data__.get(field.name)
        assert ours == theirs and type(ours) is type(theirs), (model.__name__, field.name,
                                                               ours, theirs)
    return built


def test_hydrated_rows_equal_peewees_reads(ctx):
    rng = random.Random(20261204)
    for _ in range(4):
        hotel = make_booking_hotel(ctx, rooms=2)
        profile = make_profile(ctx, hotel.id, first_name=rng.choice([None, "Ann"]),
                               last_name=f"Guest{rng.randint(1, 999)}")
        arrival = hotel.today + timedelta(days=rng.randint(0, 5))
        stay = make_reservation(ctx, hotel, guest_profile_id=profile.id,
                                notes=rng.choice([None, "late arrival", "ünïcode"]),
                                arrival_date=arrival.isoformat(),
                                departure_date=(arrival + timedelta(days=rng.randint(1, 4)))
                                .isoformat())
        with read_scope(ctx):
            for model, row_id in ((Reservation, stay.id), (Profile, profile.id),
                                  (Room, hotel.rooms[0].id)):
                _same(model, row_id)
            folio = Folio.select(Folio.id).where(Folio.reservation == stay.id).first()
            if folio is not None:
                _same(Folio, folio.id)


def test_control_a_wrong_conversion_is_seen(ctx):
    """A plan that leaves the total amount as the driver's text (or float) is caught."""
    hotel = make_booking_hotel(ctx, rooms=1)
    stay = make_reservation(ctx, hotel)

    class Careless(RowPlan):
        def build(self, row):
            obj = super().build(row)
            obj.__data__["total_amount"] = str(obj.__data__["total_amount"])
            return obj

    with read_scope(ctx):
        assert isinstance(Reservation.get_by_id(stay.id).total_amount, Decimal)
        with pytest.raises(AssertionError):
            _same(Reservation, stay.id, Careless(Reservation).build)


def test_a_row_of_the_wrong_width_is_refused(ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    with read_scope(ctx):
        raw = _raw(Room, hotel.rooms[0].id)
        with pytest.raises(ValueError):
            Room.from_columns(raw[:-1])
        assert Room.from_columns(raw).id == hotel.rooms[0].id
        assert Room.column_count() == len(raw)
    assert uuid.UUID(str(hotel.rooms[0].id))
