"""The month cache of rates keeps one catalog version per property, and every writer of rates
moves its plan's version (pms.queries.availability, pms.db.versioned)."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from decimal import Decimal

import msgspec
import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.db.versioned import VersionedRowsSkipped
from pms.models import RateSchedule
from pms.queries import availability as queries
from pms.schemas.availability import AvailabilityIn
from pms.schemas.rates import RatesIn
from pms.services.inventory import availability
from pms.services.rates import rates
from tests.factories import load_rates, make_property, make_rate_plan, make_room, make_room_type


def _hotel(ctx, start, days):
    prop = make_property(ctx)
    types = [make_room_type(ctx, prop.id, code=c, name=c) for c in ("DBL", "TWN")]
    for rt in types:
        make_room(ctx, prop.id, rt.id)
    plans = [make_rate_plan(ctx, prop.id, code=c, name=c) for c in ("BAR", "ADV")]
    for plan in plans:
        for rt in types:
            load_rates(ctx, prop.id, plan.id, rt.id, amount="100.00", start=start, days=days)
    return prop, types, plans


def _held(ctx, prop):
    return [key for key in queries.rate_cache_keys() if key[:2] == (ctx.env_id, prop.id)]


def test_a_new_catalog_version_drops_the_months_of_the_one_before(ctx, backend, database):
    if backend != "postgres":
        pytest.skip("the month cache is PostgreSQL's (SQLite reads the rates row by row)")
    arrival = date(2033, 3, 27)
    prop, types, plans = _hotel(ctx, date(2033, 3, 20), 20)

    def search():
        body = {"arrival_date": str(arrival), "departure_date": str(arrival + timedelta(days=8)),
                "adults": 2, "include_unavailable": True}
        return availability.search_property(ctx, prop.id, msgspec.convert(body, AvailabilityIn))

    search()
    first = _held(ctx, prop)
    assert {key[3] for key in first} == {date(2033, 3, 1), date(2033, 4, 1)}
    for n in range(3):  # three rate changes, each a new version, each searched
        rates.set_rates(ctx, prop.id, plans[0].id, msgspec.convert({"rates": [
            {"room_type_id": str(types[0].id), "from_date": "2033-04-01",
             "to_date": "2033-04-01", "amount": f"{200 + n}.00"}]}, RatesIn))
        out = search()
        held = _held(ctx, prop)
        assert len(held) == 2 and len({key[2] for key in held}) == 1, held  # one version
        assert held[0][2] != first[0][2]
    offer = next(o for t in out.room_types if t.code == "DBL" for o in t.offers
                 if o.rate_plan_code == "BAR")
    assert offer.room_total == Decimal("902.00")  # 7 x 100 + 202 (the newest price)


def _row(prop, plan, rt, day, amount="90.00"):
    return {"id": uuid.uuid4(), "property": prop.id, "rate_plan": plan.id, "room_type": rt.id,
            "date": day, "amount": Decimal(amount), "currency": plan.currency}


def _count(ctx, plan):
    with read_scope(ctx):
        return RateSchedule.select().where(RateSchedule.rate_plan == plan.id).count()


def test_a_rate_writer_that_does_not_move_its_plans_version_is_refused(ctx, database):
    prop, types, plans = _hotel(ctx, date(2033, 6, 1), 3)
    before = _count(ctx, plans[0])
    # rows of a plan, with no event of it: refused, nothing written
    with pytest.raises(VersionedRowsSkipped, match="RatePlan"):
        with unit_of_work(ctx):
            RateSchedule.insert_many([_row(prop, plans[0], types[0], date(2033, 7, 1))]).execute()
    assert _count(ctx, plans[0]) == before
    # an event of ANOTHER plan does not cover it
    with pytest.raises(VersionedRowsSkipped):
        with unit_of_work(ctx) as uow:
            RateSchedule.insert_many([_row(prop, plans[0], types[0], date(2033, 7, 1))]).execute()
            uow.emit("hotel:pms:rate_schedule:updated", plans[1], {})
    # an UPDATE by condition needs an event of a plan
    with pytest.raises(VersionedRowsSkipped):
        with unit_of_work(ctx):
            RateSchedule.update(amount=Decimal("1.00")).where(
                RateSchedule.rate_plan == plans[0].id).execute()
    # outside a unit of work, nothing could move a version
    with pytest.raises(VersionedRowsSkipped), read_scope(ctx):
        RateSchedule.delete().where(RateSchedule.rate_plan == plans[0].id).execute()
    assert _count(ctx, plans[0]) == before
    # with its plan's event it commits
    with unit_of_work(ctx) as uow:
        RateSchedule.insert_many([_row(prop, plans[0], types[0], date(2033, 7, 1))]).execute()
        uow.emit("hotel:pms:rate_schedule:updated", plans[0], {})
    assert _count(ctx, plans[0]) == before + 1


def test_every_rate_writer_of_the_service_moves_the_version(api, ctx):
    """The API's rate writer (PUT .../rates) passes the guard and moves the plan's version."""
    prop, types, plans = _hotel(ctx, date(2033, 8, 1), 3)
    with read_scope(ctx):
        version = type(plans[0]).get_by_id(plans[0].id).version
    resp = api.put(f"/v1/properties/{prop.id}/rate-plans/{plans[0].id}/rates", {"rates": [
        {"room_type_id": str(types[0].id), "from_date": "2033-08-01", "to_date": "2033-08-02",
         "amount": "120.00"}]})
    assert resp.status_code == 200, resp.text
    with read_scope(ctx):
        assert type(plans[0]).get_by_id(plans[0].id).version == version + 1
