"""every change of what can be sold emits `hotel:pms:ari:updated` in its own
transaction, and a consumer applying them in aggregateversion order holds what the search
answers (both backends; the relay/RabbitMQ replay is tests/workers/test_ari_replay.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.errors import RoomTypeUnavailable
from pms.models.platform import OutboxEvent
from pms.schemas.availability import AvailabilityIn
from pms.schemas.inventory import MaintenanceIn, SellLimitIn
from pms.schemas.rates import RatesIn, RestrictionIn
from pms.schemas.reservations import CheckInIn, ReservationPatch
from pms.services.cashiering import folios
from pms.services.distribution.ari_events import ARI_UPDATED, amount_text
from pms.services.frontdesk import checkin, checkout
from pms.services.housekeeping import maintenance
from pms.services.inventory import availability, inventory
from pms.services.rates import rates
from pms.services.reservations import reservations, stays
from tests.factories import make_booking_hotel, make_reservation, pay_folio

pytestmark = pytest.mark.usefixtures("database")

WINDOW = 6  # nights compared from the hotel's business date


class Projection:
    """What a channel holds: per room type and night, the last sellable, rates and
    restrictions it was told, applying each stream's events in aggregateversion order (any
    version not above the last applied is dropped, as a dedup-by-version consumer does)."""

    def __init__(self, *, gaps_ok: bool = False) -> None:
        self.gaps_ok = gaps_ok  # a channel that starts from a full push has no earlier ones
        self.last: dict[str, int] = {}
        self.sellable: dict[tuple[str, str], int] = {}
        self.rates: dict[tuple[str, str], dict[str, str]] = {}
        self.restrictions: dict[tuple[str, str], dict[str, Any]] = {}
        self.allotments: dict[tuple[str, str], dict[str, int]] = {}
        # per (room type, night): {plan: {occupancy: amount}}; per (room type, plan): the
        # plan's `per_stay` and `packages` as the last event that priced it named them
        self.prices: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
        self.plans: dict[tuple[str, str], dict[str, Any]] = {}

    def apply(self, events: list[dict[str, Any]]) -> None:
        for e in sorted(events, key=lambda e: (e["subject"], e["aggregateversion"])):
            if e["type"] != ARI_UPDATED or e["aggregateversion"] <= self.last.get(e["subject"], 0):
                continue
            assert self.gaps_ok or e["aggregateversion"] == self.last.get(e["subject"], 0) + 1, \
                "a gap"
            self.last[e["subject"]] = e["aggregateversion"]
            rt = e["data"]["room_type_id"]
            assert rt == e["subject"]
            for plan, meta in e["data"]["rate_plans"].items():
                if "per_stay" in meta:
                    self.plans[(rt, plan)] = meta
            for night in e["data"]["nights"]:
                key = (rt, night["date"])
                self.sellable[key] = night["sellable"]
                self.rates.setdefault(key, {}).update(night["rates"])
                prices = self.prices.setdefault(key, {})
                for plan in night["rates"]:  # a plan the night rates but does not price: none
                    if plan in night.get("prices", {}):
                        prices[plan] = night["prices"][plan]
                    else:
                        prices.pop(plan, None)
                if "restrictions" in night:
                    self.restrictions[key] = night["restrictions"]
                if "allotments" in night:  # the night's whole map
                    self.allotments[key] = night["allotments"]


    def stay_total(self, room_type_id: Any, rate_plan_id: Any, nights: list[Any],
                   guests: int) -> Decimal | None:
        """What a channel charges for the stay from what it holds: the nights' prices for
        `guests` plus the plan's per-stay part; None when a night has no price for them."""
        rt, plan = str(room_type_id), str(rate_plan_id)
        total = Decimal(self.plans.get((rt, plan), {}).get("per_stay", {}).get(str(guests), "0"))
        for night in nights:
            amount = self.prices.get((rt, night.isoformat()), {}).get(plan, {}).get(str(guests))
            if amount is None:
                return None
            total += Decimal(amount)
        return total


def ari_rows(ctx) -> list[dict[str, Any]]:
    """The env's ARI outbox rows as CloudEvent-like dicts."""
    with read_scope(ctx):
        rows = list(OutboxEvent.select().where(OutboxEvent.type == ARI_UPDATED)
                    .order_by(OutboxEvent.subject, OutboxEvent.aggregate_version))
    return [{"type": r.type, "subject": r.subject, "aggregateversion": r.aggregate_version,
             "data": r.data, "id": str(r.id)} for r in rows]


def searched(ctx, hotel, day) -> int:
    body = msgspec.convert({"arrival_date": day.isoformat(),
                            "departure_date": (day + timedelta(days=1)).isoformat(),
                            "adults": 1}, AvailabilityIn)
    out = availability.search_property(ctx, hotel.id, body)
    (rt,) = [r for r in out.room_types if r.room_type_id == hotel.room_type.id]
    return rt.available


def assert_projection_is_the_search(ctx, hotel, projection) -> None:
    rt = str(hotel.room_type.id)
    for i in range(WINDOW):
        day = hotel.today + timedelta(days=i)
        assert projection.sellable.get((rt, day.isoformat())) == searched(ctx, hotel, day), day


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=3, amount="100.00")


def step(ctx, hotel, projection, seen: set[str]) -> list[dict[str, Any]]:
    """The ARI events since the last step (at least one), applied; the projection then
    equals the search night by night."""
    new = [e for e in ari_rows(ctx) if e["id"] not in seen]
    assert new, "the change emitted no ARI event"
    seen.update(e["id"] for e in new)
    projection.apply(new)
    assert_projection_is_the_search(ctx, hotel, projection)
    return new


def test_every_change_of_what_can_be_sold_emits_an_ari_event_the_search_agrees_with(ctx, hotel):
    projection, seen = Projection(), set()
    projection.apply(ari_rows(ctx))  # the rates loaded by the factory
    seen.update(e["id"] for e in ari_rows(ctx))
    today = hotel.today
    # a booking
    a = make_reservation(ctx, hotel, departure_date=(today + timedelta(days=3)).isoformat())
    (event,) = step(ctx, hotel, projection, seen)
    assert [n["date"] for n in event["data"]["nights"]] == [
        (today + timedelta(days=i)).isoformat() for i in range(3)]
    assert [n["sellable"] for n in event["data"]["nights"]] == [2, 2, 2]
    assert event["data"]["property_id"] == str(hotel.id)
    # an edit (new departure: the old and new nights)
    patch = msgspec.convert({"departure_date": (today + timedelta(days=4)).isoformat()},
                            ReservationPatch)
    reservations.edit_reservation(ctx, hotel.id, a.id, patch)
    step(ctx, hotel, projection, seen)
    # a cancel
    b = make_reservation(ctx, hotel)
    step(ctx, hotel, projection, seen)
    reservations.cancel_reservation(ctx, hotel.id, b.id)
    step(ctx, hotel, projection, seen)
    # a no-show (arrival today)
    c = make_reservation(ctx, hotel)
    step(ctx, hotel, projection, seen)
    stays.no_show(ctx, hotel.id, c.id)
    step(ctx, hotel, projection, seen)
    # an early check-out gives the unused nights back
    count = len(ari_rows(ctx))
    row = checkin.check_in(ctx, hotel.id, a.id, CheckInIn())
    assert len(ari_rows(ctx)) == count  # (a check-in sells nothing more: no event)
    # out of order, and back
    oo, _ = maintenance.create_maintenance(ctx, hotel.id, msgspec.convert(
        {"room_id": str(hotel.rooms[2].id), "kind": "OUT_OF_ORDER",
         "from_date": (today + timedelta(days=1)).isoformat(),
         "to_date": (today + timedelta(days=2)).isoformat()}, MaintenanceIn))
    step(ctx, hotel, projection, seen)
    maintenance.end_maintenance(ctx, hotel.id, oo.id)
    step(ctx, hotel, projection, seen)
    # a sell limit
    inventory.set_sell_limits(ctx, hotel.id, msgspec.convert(
        {"room_type_id": str(hotel.room_type.id), "from_date": today.isoformat(),
         "to_date": (today + timedelta(days=5)).isoformat(), "sell_limit": 2}, SellLimitIn))
    step(ctx, hotel, projection, seen)
    # rates: the changed nights carry the plan's new amount
    rates.set_rates(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
        {"rates": [{"room_type_id": str(hotel.room_type.id), "from_date": today.isoformat(),
                    "to_date": (today + timedelta(days=1)).isoformat(), "amount": "120.50"}]},
        RatesIn))
    (event,) = step(ctx, hotel, projection, seen)
    assert [n["rates"] for n in event["data"]["nights"]] == [{str(hotel.rate_plan.id): "120.5"}] * 2
    # restrictions, in the channels' names
    rates.set_restrictions(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
        {"from_date": today.isoformat(), "to_date": today.isoformat(), "min_stay_through": 2,
         "closed_to_arrival": True}, RestrictionIn))
    (event,) = step(ctx, hotel, projection, seen)
    (night,) = event["data"]["nights"]
    assert night["restrictions"][str(hotel.rate_plan.id)] == {
        "closed": False, "closed_to_arrival": True, "closed_to_departure": False,
        "min_stay_arrival": None, "max_stay_arrival": None, "min_stay_through": 2,
        "max_stay_through": None}
    # the early check-out, two days on
    day2 = ctx.with_(now=ctx.now + timedelta(days=2))
    pay_folio(day2, row, folios.get_reservation_folio(day2, hotel.id, row.id).balance_due)
    checkout.check_out(day2, hotel.id, row.id)
    new = step(ctx, hotel, projection, seen)
    released = {n["date"] for e in new for n in e["data"]["nights"]}
    assert (today + timedelta(days=3)).isoformat() in released


def test_a_refused_booking_emits_nothing_and_versions_have_no_gaps(ctx, hotel):
    for _ in range(3):
        make_reservation(ctx, hotel)
    before = ari_rows(ctx)
    with pytest.raises(RoomTypeUnavailable):
        make_reservation(ctx, hotel)
    assert ari_rows(ctx) == before
    versions = sorted(e["aggregateversion"] for e in before)
    assert versions == list(range(1, len(versions) + 1))
    subjects = {e["subject"] for e in before}
    assert subjects == {str(hotel.room_type.id)}


def test_a_stay_across_months_is_one_event_per_month(ctx, hotel):
    end_of_month = hotel.today.replace(day=28) + timedelta(days=4)
    last = end_of_month.replace(day=1) - timedelta(days=1)  # the month's last day
    before = {e["id"] for e in ari_rows(ctx)}
    make_reservation(ctx, hotel, arrival_date=last.isoformat(),
                     departure_date=(last + timedelta(days=2)).isoformat())
    new = [e for e in ari_rows(ctx) if e["id"] not in before]
    assert sorted(len(e["data"]["nights"]) for e in new) == [1, 1]
    assert len({e["data"]["nights"][0]["date"][:7] for e in new}) == 2


def test_an_event_is_written_in_the_changes_own_transaction(ctx, hotel):
    """A change rolled back leaves no ARI event (the same unit of work)."""
    before = ari_rows(ctx)

    class Boom(Exception):
        pass

    with pytest.raises(Boom), unit_of_work(ctx):
        inventory.take_rooms(hotel.id, hotel.room_type.id, [hotel.today])
        raise Boom
    assert ari_rows(ctx) == before


def test_amount_text_is_canonical():
    assert [amount_text(a) for a in ("120.00", "99.50", "0.00", "1E+2", "7")] == [
        "120", "99.5", "0", "100", "7"]


def test_the_stream_is_the_room_type(ctx, hotel):
    make_reservation(ctx, hotel)
    (e, *_) = [e for e in ari_rows(ctx) if e["data"]["nights"][0]["sellable"] == 2]
    assert uuid.UUID(e["subject"]) == hotel.room_type.id


def test_rooms_created_moved_and_deleted_emit_the_sellable_change(ctx):
    """a room made, moved to another room type or deleted changes what its room
    types can sell on every night channels hold (the full push's 365 days): their ARI events
    say so, and the consumer holds what the search answers. A room type without an ARI stream
    (nothing told to any channel yet) emits nothing."""
    from pms.schemas.catalog import RoomPatch
    from pms.services.catalog import catalog
    from tests.factories import load_rates, make_room, make_room_type

    hotel = make_booking_hotel(ctx, rooms=2)
    other = make_room_type(ctx, hotel.id)
    unpriced = make_room_type(ctx, hotel.id)
    load_rates(ctx, hotel.id, hotel.rate_plan.id, other.id)  # (its stream's first event)
    consumer = Projection(gaps_ok=True)
    consumer.apply(ari_rows(ctx))
    later = hotel.today + timedelta(days=300)

    def held(rt, day):
        return consumer.sellable.get((str(rt.id), day.isoformat()))

    room = make_room(ctx, hotel.id, hotel.room_type.id, room_number="909")
    consumer.apply(ari_rows(ctx))
    assert held(hotel.room_type, hotel.today) == held(hotel.room_type, later) == 3
    catalog.update_child(ctx, catalog.ROOM, hotel.id, room.id,
                         msgspec.convert({"room_type_id": str(other.id)}, RoomPatch))
    consumer.apply(ari_rows(ctx))
    assert held(hotel.room_type, later) == 2 and held(other, later) == 1
    catalog.delete_child(ctx, catalog.ROOM, hotel.id, room.id)
    consumer.apply(ari_rows(ctx))
    assert held(other, hotel.today) == held(other, later) == 0
    assert held(hotel.room_type, hotel.today) == searched(ctx, hotel, hotel.today) == 2
    # a room type no channel holds a night of (no stream yet) emits nothing for its rooms
    make_room(ctx, hotel.id, unpriced.id, room_number="910")
    assert not [e for e in ari_rows(ctx) if e["subject"] == str(unpriced.id)]
    nights = [n for e in ari_rows(ctx) if e["subject"] == str(other.id)
              for n in e["data"]["nights"]]
    assert {n["date"] for n in nights} >= {(hotel.today + timedelta(days=i)).isoformat()
                                           for i in range(365)}
