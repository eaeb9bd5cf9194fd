"""one sellable formula with rooms held by blocks.

The booking's take (PostgreSQL: `pms_take_nights`, migration 034; SQLite: the locked recount
and the guarded update of pms.services.inventory.inventory) sells exactly what the reference
(`pms.domain.availability.sellable` over `night_counts`) says is for sale, on random calendars
with sold, held, sell limits and maintenance; the search's SQL agrees (the equivalence tests).
"""

from __future__ import annotations

import random
import uuid
from datetime import date, timedelta

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.domain.availability import NightCount, sellable
from pms.errors import RoomTypeUnavailable
from pms.models.inventory import InventoryDay, Maintenance
from pms.queries.availability import load_sellable
from pms.queries.inventory_counts import night_counts
from pms.services.inventory import inventory
from tests.factories import make_property, make_room, make_room_type

pytestmark = pytest.mark.usefixtures("database")

ARR = date(2031, 3, 1)
DAYS = 12


class _Undo(Exception):
    pass


def test_the_formula_subtracts_held_rooms_and_never_goes_below_zero():
    assert sellable(5, 1, 0, None, 1, 2) == 1
    assert sellable(5, 0, 0, 3, 1, 1) == 1
    assert sellable(5, 0, 0, None, 4, 3) == 0
    assert sellable(5, 0, 0, None, 0, -1) == 5
    assert NightCount(physical=4, ooo=0, oos=1, sell_limit=None, sold=1, held=2).sellable == 0


def test_the_take_sells_what_the_reference_says_is_for_sale(ctx):
    rnd = random.Random(33)
    prop = make_property(ctx)
    types = [make_room_type(ctx, prop.id) for _ in range(3)]
    rooms = {rt.id: [make_room(ctx, prop.id, rt.id) for _ in range(2 + i)]
             for i, rt in enumerate(types)}
    with unit_of_work(ctx):
        InventoryDay.delete().where(InventoryDay.property == prop.id).execute()
        rows = []
        for rt in types:
            for d in range(DAYS):
                sold = rnd.choice([0, 0, 1, 2])
                rows.append({"id": uuid.uuid4(), "property": prop.id, "room_type": rt.id,
                             "date": ARR + timedelta(days=d),
                             "sell_limit": rnd.choice([None, None, 0, 1, 3]), "sold": sold,
                             "held": rnd.choice([0, 0, 1, 2, 3]),
                             "physical": max(len(rooms[rt.id]), sold)})
        InventoryDay.insert_many(rows).execute()
        Maintenance.insert_many([
            {"id": uuid.uuid4(), "property": prop.id, "room": rooms[rt.id][0].id,
             "kind": rnd.choice(["OUT_OF_ORDER", "OUT_OF_SERVICE"]),
             "from_date": ARR + timedelta(days=rnd.randint(0, DAYS - 3)),
             "to_date": ARR + timedelta(days=DAYS - 2), "active": True} for rt in types]).execute()
    ids = [rt.id for rt in types]
    with read_scope(ctx):
        counts = night_counts(prop.id, ids, ARR, ARR + timedelta(days=DAYS))
        fast = load_sellable(prop.id, ids, ARR, DAYS)
    seen = set()
    for rt in types:
        assert fast[rt.id] == [counts[(rt.id, ARR + timedelta(days=d))].sellable
                               for d in range(DAYS)]
        for d in range(DAYS):
            night = ARR + timedelta(days=d)
            want = counts[(rt.id, night)].sellable
            seen.add((want > 0, counts[(rt.id, night)].held > 0))
            with pytest.raises(RoomTypeUnavailable), unit_of_work(ctx):
                inventory.take_rooms(prop.id, rt.id, [night], want + 1)
            if want:
                with pytest.raises(_Undo), unit_of_work(ctx):
                    inventory.take_rooms(prop.id, rt.id, [night], want)
                    raise _Undo
    assert seen == {(True, True), (True, False), (False, True), (False, False)}, seen
