"""Calendar rows made ahead: a room type is born with its `inventory_day` rows for the
horizon, in one statement and the same unit of work; the night audit extends the window as the
business date rolls (and heals a room type that lacked rows); the horizon is a setting
(PMS_CALENDAR_HORIZON_DAYS). Both databases. `pms-cli calendar fill`:
tests/cli/test_calendar_cli.py; a booking inside the horizon: test_booking_write_path.py."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta

import msgspec
import pytest
from playhouse.test_utils import count_queries

from pms import wiring
from pms.config import DEFAULT_CALENDAR_HORIZON_DAYS, calendar_horizon_days, load_settings
from pms.db.uow import read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.errors import AlreadyExists
from pms.models import Property
from pms.models.inventory import InventoryDay
from pms.schemas import catalog as cs
from pms.services.catalog import catalog
from pms.services.inventory import inventory_calendar
from pms.services.night_audit.end_of_day import Hooks, run_night_audit
from tests.factories import make_booking_hotel, make_property, make_reservation, make_room_type
from tests.helpers import EOD_OVERRIDE, counts

pytestmark = pytest.mark.usefixtures("database")

_CALENDAR_INSERT = re.compile(r"INSERT INTO\s+\"?inventory_day\"?", re.I)


def _days(ctx, room_type_id):
    with read_scope(ctx):
        return [d for (d,) in InventoryDay.select(InventoryDay.date).where(
            InventoryDay.room_type == room_type_id).order_by(InventoryDay.date).tuples()]


def _calendar_inserts(queries):
    return [q for q in queries if _CALENDAR_INSERT.search(str(q.msg[0]))]


def test_a_room_type_is_born_with_its_calendar_for_the_horizon_in_one_statement(ctx):
    prop = make_property(ctx)
    today = business_date(prop, ctx.now)
    before = counts(ctx)
    with count_queries() as q:
        rt = make_room_type(ctx, prop.id)
    assert len(_calendar_inserts(q.get_queries())) == 1  # set-based: one statement, not 550
    days = _days(ctx, rt.id)
    assert days == [today + timedelta(days=i) for i in range(DEFAULT_CALENDAR_HORIZON_DAYS)]
    with read_scope(ctx):
        rows = list(InventoryDay.select().where(InventoryDay.room_type == rt.id))
    assert {(r.sold, r.sell_limit, r.physical, r.ooo, r.oos, r.property_id) for r in rows} == {
        (0, None, 0, 0, 0, prop.id)}
    ids = {r.id for r in rows}
    assert len(ids) == len(rows) and {uuid.UUID(str(i)).version for i in ids} == {4}
    # not a domain change: the room type's own event and audit row only
    assert counts(ctx) == (before[0] + 1, before[1] + 1)


def test_the_horizon_is_the_wired_setting_and_counts_from_the_business_date(ctx):
    prop = make_property(ctx)
    with unit_of_work(ctx):
        Property.update(business_date=datetime(2031, 2, 27).date()).where(
            Property.id == prop.id).execute()
    with wiring.installed(calendar_horizon_days=3):
        rt = make_room_type(ctx, prop.id)
    assert [d.isoformat() for d in _days(ctx, rt.id)] == ["2031-02-27", "2031-02-28",
                                                          "2031-03-01"]


def test_a_room_type_that_is_not_created_leaves_no_calendar_rows(ctx):
    prop = make_property(ctx)
    rt = make_room_type(ctx, prop.id, code="DUP")
    with read_scope(ctx):
        before = InventoryDay.select().count()
    with pytest.raises(AlreadyExists):
        catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
            {"code": "DUP", "name": "Again"}, cs.RoomTypeIn))
    with read_scope(ctx):
        assert InventoryDay.select().count() == before
    assert len(_days(ctx, rt.id)) == DEFAULT_CALENDAR_HORIZON_DAYS


def test_fill_is_idempotent_and_keeps_what_is_sold(ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    make_reservation(ctx, hotel)
    with unit_of_work(ctx):
        added = inventory_calendar.fill(hotel.id, hotel.today, 10)
    assert added == 0
    with read_scope(ctx):
        assert InventoryDay.get((InventoryDay.room_type == hotel.room_type.id)
                                & (InventoryDay.date == hotel.today)).sold == 1


def test_the_night_audit_extends_the_horizon_by_the_day_it_rolls_and_heals_gaps(ctx):
    with wiring.installed(calendar_horizon_days=20):
        hotel = make_booking_hotel(ctx, rooms=2)
        other = make_room_type(ctx, hotel.id)
        with unit_of_work(ctx):  # a room type made before calendars were kept ahead
            InventoryDay.delete().where(InventoryDay.room_type == other.id).execute()
        day = hotel.today
        result = run_night_audit(ctx, hotel.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
        assert result.status == "DONE"
        roll = next(s for s in result.steps if s.name == "roll_date")
        assert roll.detail["calendar_rows_added"] == 1 + 20  # the new night, the healed type
        assert _days(ctx, hotel.room_type.id) == [day + timedelta(days=i) for i in range(21)]
        assert _days(ctx, other.id) == [day + timedelta(days=i) for i in range(1, 21)]
        # the next business date: one night more at the far end for each room type
        result = run_night_audit(ctx, hotel.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
        assert result.business_date == day + timedelta(days=1)
        roll = next(s for s in result.steps if s.name == "roll_date")
        assert roll.detail["calendar_rows_added"] == 2
        assert _days(ctx, other.id)[-1] == day + timedelta(days=21)


def test_the_horizon_setting():
    assert load_settings({}).calendar_horizon_days == DEFAULT_CALENDAR_HORIZON_DAYS == 550
    assert load_settings({"PMS_CALENDAR_HORIZON_DAYS": "90"}).calendar_horizon_days == 90
    assert calendar_horizon_days("") == DEFAULT_CALENDAR_HORIZON_DAYS
    for bad in ("0", "-5", "abc", "1.5", "99999"):
        with pytest.raises(ValueError, match="PMS_CALENDAR_HORIZON_DAYS"):
            calendar_horizon_days(bad)
    assert wiring.Wiring().calendar_horizon_days == DEFAULT_CALENDAR_HORIZON_DAYS
    assert wiring.for_web({"PMS_CALENDAR_HORIZON_DAYS": "30"}).calendar_horizon_days == 30
