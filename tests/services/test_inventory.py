"""take_rooms / release_rooms / maintenance counts at the service level (both backends)."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import msgspec
import pytest

from pms import wiring
from pms.db.uow import read_scope, unit_of_work
from pms.errors import RoomTypeUnavailable, ValidationFailed
from pms.models.inventory import InventoryDay
from pms.schemas.inventory import MaintenanceIn, SellLimitIn
from pms.services.housekeeping import maintenance
from pms.services.inventory import inventory
from tests.factories import make_property, make_room, make_room_type
from tests.helpers import counts

pytestmark = pytest.mark.usefixtures("database")

A, B, C, D = (date(2030, 6, d) for d in (1, 2, 3, 4))


@pytest.fixture
def hotel(ctx):
    prop = make_property(ctx)
    rt = make_room_type(ctx, prop.id)
    rooms = [make_room(ctx, prop.id, rt.id) for _ in range(2)]
    return prop, rt, rooms


def take(ctx, prop, rt, nights, count=1):
    with unit_of_work(ctx):
        inventory.take_rooms(prop.id, rt.id, nights, count)


def release(ctx, prop, rt, nights, count=1):
    with unit_of_work(ctx):
        inventory.release_rooms(prop.id, rt.id, nights, count)


def sold(ctx, rt, nights):
    with read_scope(ctx):
        rows = {d.date: d.sold for d in InventoryDay.select().where(InventoryDay.room_type == rt.id)}
    return [rows.get(n, 0) for n in nights]


def test_take_rooms_sells_every_night(ctx, hotel):
    prop, rt, _ = hotel
    take(ctx, prop, rt, [A, B])
    assert sold(ctx, rt, [A, B, C]) == [1, 1, 0]


def test_take_rooms_writes_no_outbox_or_audit_rows(ctx, hotel):
    prop, rt, _ = hotel
    before = counts(ctx)
    take(ctx, prop, rt, [A])
    assert counts(ctx) == before


def test_take_rooms_is_all_or_nothing(ctx, hotel):
    prop, rt, _ = hotel
    take(ctx, prop, rt, [B], count=2)
    with pytest.raises(RoomTypeUnavailable) as exc:
        take(ctx, prop, rt, [A, B, C])
    assert exc.value.status == 409 and exc.value.code == "room_type_unavailable"
    assert exc.value.extra["nights"] == [B.isoformat()]
    assert sold(ctx, rt, [A, B, C]) == [0, 2, 0]


def test_take_more_rooms_than_exist_is_unavailable(ctx, hotel):
    prop, rt, _ = hotel
    with pytest.raises(RoomTypeUnavailable):
        take(ctx, prop, rt, [A], count=3)


def test_take_rooms_respects_the_sell_limit(ctx, hotel):
    prop, rt, _ = hotel
    inventory.set_sell_limits(ctx, prop.id, msgspec.convert(
        {"room_type_id": str(rt.id), "from_date": str(A), "to_date": str(A), "sell_limit": 1},
        SellLimitIn))
    take(ctx, prop, rt, [A])
    with pytest.raises(RoomTypeUnavailable):
        take(ctx, prop, rt, [A])


def test_take_rooms_respects_maintenance(ctx, hotel):
    prop, rt, rooms = hotel
    maintenance.create_maintenance(ctx, prop.id, msgspec.convert(
        {"room_id": str(rooms[0].id), "kind": "OUT_OF_ORDER", "from_date": str(A),
         "to_date": str(A)}, MaintenanceIn))
    take(ctx, prop, rt, [A])
    with pytest.raises(RoomTypeUnavailable):
        take(ctx, prop, rt, [A])
    take(ctx, prop, rt, [B], count=2)


def test_rooms_added_later_become_sellable(ctx, hotel):
    prop, rt, _ = hotel
    take(ctx, prop, rt, [A], count=2)
    make_room(ctx, prop.id, rt.id)
    take(ctx, prop, rt, [A])
    with read_scope(ctx):
        assert InventoryDay.get((InventoryDay.room_type == rt.id)
                                & (InventoryDay.date == A)).physical == 3


def test_another_propertys_room_type_has_nothing_to_sell(ctx, hotel):
    prop, _, _ = hotel
    other = make_property(ctx)
    other_rt = make_room_type(ctx, other.id)
    make_room(ctx, other.id, other_rt.id)
    with pytest.raises(RoomTypeUnavailable):
        take(ctx, prop, other_rt, [A])


@pytest.mark.parametrize("nights, count", [([], 1), ([A], 0), ([A], -1)])
def test_take_rooms_bad_arguments(ctx, hotel, nights, count):
    prop, rt, _ = hotel
    with pytest.raises(ValidationFailed):
        take(ctx, prop, rt, nights, count)


def test_take_rooms_outside_a_transaction_is_refused(ctx, hotel):
    from pms.db.scope import tenant_scope

    prop, rt, _ = hotel
    with pytest.raises(RuntimeError), tenant_scope(ctx.env_id):
        inventory.take_rooms(prop.id, rt.id, [A])


def test_duplicate_nights_count_once(ctx, hotel):
    prop, rt, _ = hotel
    take(ctx, prop, rt, [A, A, B])
    assert sold(ctx, rt, [A, B]) == [1, 1]


def test_release_rooms_gives_nights_back(ctx, hotel):
    prop, rt, _ = hotel
    take(ctx, prop, rt, [A, B], count=2)
    release(ctx, prop, rt, [B])
    assert sold(ctx, rt, [A, B]) == [2, 1]
    take(ctx, prop, rt, [B])


def test_release_never_goes_below_zero(ctx, hotel):
    prop, rt, _ = hotel
    take(ctx, prop, rt, [A])
    release(ctx, prop, rt, [A, B], count=2)
    assert sold(ctx, rt, [A, B]) == [0, 0]


def test_edit_style_release_and_take_in_one_transaction(ctx, hotel):
    prop, rt, _ = hotel
    other_rt = make_room_type(ctx, prop.id)
    make_room(ctx, prop.id, other_rt.id)
    take(ctx, prop, rt, [A, B])
    with unit_of_work(ctx):
        inventory.lock_inventory(prop.id, [(rt.id, [A, B]), (other_rt.id, [B, C])])
        inventory.release_rooms(prop.id, rt.id, [A, B])
        inventory.take_rooms(prop.id, other_rt.id, [B, C])
    assert sold(ctx, rt, [A, B]) == [0, 0]
    assert sold(ctx, other_rt, [B, C]) == [1, 1]


def test_a_failed_take_rolls_back_the_callers_release(ctx, hotel):
    prop, rt, _ = hotel
    other_rt = make_room_type(ctx, prop.id)           # no rooms: nothing to sell
    take(ctx, prop, rt, [A])
    with pytest.raises(RoomTypeUnavailable), unit_of_work(ctx):
        inventory.release_rooms(prop.id, rt.id, [A])
        inventory.take_rooms(prop.id, other_rt.id, [A])
    assert sold(ctx, rt, [A]) == [1]


def test_control_switch_skips_lock_and_guard_but_still_checks(ctx, hotel):
    prop, rt, _ = hotel
    with wiring.installed(locking_enabled=False):
        take(ctx, prop, rt, [A], count=2)
        with pytest.raises(RoomTypeUnavailable):
            take(ctx, prop, rt, [A])
    assert sold(ctx, rt, [A]) == [2]


def test_night_counts_are_batched(ctx, hotel):
    """Three queries whatever the range or the number of room types."""
    from playhouse.test_utils import count_queries

    prop, rt, _ = hotel
    types = [rt.id] + [make_room_type(ctx, prop.id).id for _ in range(4)]
    for days in (1, 60):
        with read_scope(ctx), count_queries() as q:
            inventory.night_counts(prop.id, types, A, A + timedelta(days=days))
        assert q.count == 3, q.get_queries()


def test_ensure_inventory_creates_rows_without_events(ctx, hotel):
    prop, rt, _ = hotel
    before = counts(ctx)
    inventory.ensure_inventory(ctx, prop.id, rt.id, A, D)
    inventory.ensure_inventory(ctx, prop.id, rt.id, A, D)
    with read_scope(ctx):
        assert InventoryDay.select().where((InventoryDay.room_type == rt.id)
                                           & InventoryDay.date.between(A, D)).count() == 3
    assert counts(ctx) == before


def test_maintenance_counts_each_room_once_per_night(ctx, hotel):
    prop, rt, rooms = hotel
    for room, kind in ((rooms[0], "OUT_OF_ORDER"), (rooms[1], "OUT_OF_SERVICE")):
        maintenance.create_maintenance(ctx, prop.id, msgspec.convert(
            {"room_id": str(room.id), "kind": kind, "from_date": str(A), "to_date": str(B)},
            MaintenanceIn))
    with read_scope(ctx):
        got = inventory.maintenance_counts(prop.id, [rt.id], A, D)
    assert got == {(rt.id, A): (1, 1), (rt.id, B): (1, 1)}
    with pytest.raises(RoomTypeUnavailable):
        take(ctx, prop, rt, [B])
    take(ctx, prop, rt, [C], count=2)


def test_maintenance_counts_unknown_type_is_empty(ctx, hotel):
    prop, _, _ = hotel
    with read_scope(ctx):
        assert inventory.maintenance_counts(prop.id, [uuid.uuid4()], A, D) == {}


def test_room_blocked_treats_to_date_as_the_last_night(ctx, hotel):
    prop, _, rooms = hotel
    maintenance.create_maintenance(ctx, prop.id, msgspec.convert(
        {"room_id": str(rooms[0].id), "kind": "OUT_OF_ORDER", "from_date": str(A),
         "to_date": str(B)}, MaintenanceIn))
    with read_scope(ctx):
        assert maintenance.room_blocked(rooms[0].id, B, C) is not None    # B is its last night
        assert maintenance.room_blocked(rooms[0].id, C, D) is None
        assert maintenance.room_blocked(rooms[0].id, A - timedelta(days=1), A) is None
        assert maintenance.room_blocked(rooms[1].id, A, D) is None
