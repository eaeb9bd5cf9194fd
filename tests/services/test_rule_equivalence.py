"""Every fast path of a rule answers what its reference path answers ("one rule in one
place"), on PostgreSQL, on the same randomized data:

- the room pick: `pms_pick_room` (migration 018, `pms.services.frontdesk.desk_writes.pick_room`) against
  `pms.services.reservations.stays.auto_assign` (the peewee path SQLite takes), on a hotel of rooms in every
  status and housekeeping mark, holds of other stays and maintenance periods (active or not);
- the restriction filter and the nightly rates of a booking: `pms_booking_refs` (the booking's
  one read, `pms.services.reservations.reservations._read_refs`) against the search's load
  (`pms.queries.availability.load_search_data` and `SearchData.rules_for`), on restrictions for
  a plan, a room type, both or neither (of this and of other plans and types), nights without a
  rate, stays touching the edges;
- selling a booking's nights: `pms_take_nights` (migrations 012, 022,
  `pms.services.inventory.inventory._take_in_one`) against `_take_by_models` (lock, recount, check,
  guarded increment), on calendars with sell limits (none, zero, tight), rooms sold, rooms out of
  order and out of service, for counts of one to three rooms;
- the folio state: `pms_folio_state` (migration 016, `pms.services.cashiering.folio_state._from_row`)
  against the peewee read (`_from_models`, the SQLite path), on folios with charges, payments of
  every status, posted room nights, split folios, and the transaction code asked for.

The sellable count's equivalence is tests/services/test_availability_equivalence.py. The seeds
are fixed, so a failure is reproducible; each test names the case that differs.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.domain.pricing import merge_rules
from pms.errors import RoomTypeUnavailable, RoomUnavailable
from pms.models import Folio, FolioCharge, FolioPayment, Reservation
from pms.models.inventory import InventoryDay, Maintenance
from pms.models.property import Room
from pms.models.rates import RatePlanAllotment, RateSchedule, Restriction
from pms.models.reservations import RoomStay
from pms.queries.availability import load_search_data
from pms.services.cashiering import folio_state
from pms.services.frontdesk import desk_writes
from pms.services.inventory import inventory
from pms.services.reservations import reservations, stays
from tests.factories import (
    make_booking_hotel,
    make_fb_stay,
    make_rate_plan,
    make_reservation,
    make_room,
    make_room_type,
)

pytestmark = [pytest.mark.postgres]

STATUSES = ["VACANT", "VACANT", "OCCUPIED"]
MARKS = ["CLEAN", "CLEAN", "DIRTY", "INSPECTED", "OUT_OF_ORDER", "OUT_OF_SERVICE"]


# -- the room pick -----------------------------------------------------------------------------

def test_the_room_pick_function_picks_what_the_python_pick_picks(ctx, pg_db):
    rnd = random.Random(2601)
    hotel = make_booking_hotel(ctx, rooms=1)
    prop = hotel.prop
    types = [hotel.room_type.id] + [make_room_type(ctx, prop.id).id for _ in range(2)]
    rooms = []
    for i in range(15):
        rooms.append(make_room(ctx, prop.id, types[i % 3], room_number=f"{300 + rnd.randrange(600)}"
                               f"-{i}"))
    stays_made = [make_reservation(ctx, hotel) for _ in range(4)]
    base = hotel.today
    with unit_of_work(ctx):
        for room in rooms:
            Room.update(status=rnd.choice(STATUSES), hk_status=rnd.choice(MARKS)).where(
                Room.id == room.id).execute()
            # at most two holds a room, one after the other (the exclusion constraint)
            start = base + timedelta(days=rnd.randrange(-3, 8))
            for _ in range(rnd.randrange(4)):
                end = start + timedelta(days=rnd.randrange(1, 6))
                RoomStay.create(reservation=rnd.choice(stays_made).id, property=prop.id,
                                room=room.id, start_date=start, end_date=end)
                start = end + timedelta(days=rnd.randrange(0, 3))
            if rnd.random() < 0.3:
                begin = base + timedelta(days=rnd.randrange(-3, 10))
                Maintenance.create(property=prop.id, room=room.id, kind="OUT_OF_ORDER",
                                   from_date=begin, to_date=begin + timedelta(days=rnd.randrange(3)),
                                   active=rnd.random() < 0.7)
    picked = unavailable = 0
    for case in range(80):
        start = base + timedelta(days=rnd.randrange(-2, 10))
        row = SimpleNamespace(id=rnd.choice(stays_made + [SimpleNamespace(id=uuid.uuid4())]).id,
                              property_id=prop.id, room_type_id=rnd.choice(types),
                              departure_date=start + timedelta(days=rnd.randrange(1, 6)))
        answers = []
        for pick in (desk_writes.pick_room, stays.auto_assign):
            with unit_of_work(ctx):
                try:
                    answers.append(pick(row, start).id)
                except RoomUnavailable:
                    answers.append(None)
        assert answers[0] == answers[1], f"case {case}: {row} from {start}: {answers}"
        picked += answers[0] is not None
        unavailable += answers[0] is None
    assert picked > 20 and unavailable > 2  # the data exercises both answers


# -- the restriction filter and the rates of a booking ------------------------------------------

def test_the_booking_read_filters_restrictions_and_rates_as_the_search_does(ctx, pg_db):
    rnd = random.Random(2602)
    hotel = make_booking_hotel(ctx, rooms=1)
    prop = hotel.prop
    types = [hotel.room_type.id, make_room_type(ctx, prop.id).id]
    make_plan = make_rate_plan(ctx, prop.id)
    plans = [hotel.rate_plan.id, make_plan.id]
    base = hotel.today + timedelta(days=40)
    with unit_of_work(ctx) as uow:
        RateSchedule.delete().where(RateSchedule.property == prop.id).execute()
        for plan in plans:
            for rt in types:
                for day in range(25):
                    if rnd.random() < 0.85:
                        RateSchedule.create(property=prop.id, rate_plan=plan, room_type=rt,
                                            date=base + timedelta(days=day),
                                            currency=prop.currency_code,
                                            amount=Decimal(rnd.randrange(5000, 30000)) / 100)
        for day in range(25):
            for plan in [None, *plans]:
                for rt in [None, *types]:
                    if rnd.random() < 0.25:
                        Restriction.create(
                            property=prop.id, rate_plan=plan, room_type=rt,
                            date=base + timedelta(days=day), closed=rnd.random() < 0.2,
                            closed_to_arrival=rnd.random() < 0.2,
                            closed_to_departure=rnd.random() < 0.2,
                            min_los=rnd.choice([None, None, 1, 2, 3]),
                            max_los=rnd.choice([None, None, 4, 7]))
        for plan_row in (hotel.rate_plan, make_plan):  # a rate writer moves its plan's version
            uow.emit("hotel:pms:rate_schedule:updated", plan_row, {})
    rules_seen = 0
    for case in range(60):
        arrival = base + timedelta(days=rnd.randrange(-3, 22))
        departure = arrival + timedelta(days=rnd.randrange(1, 8))
        plan, rt = rnd.choice(plans), rnd.choice(types)
        nights = [arrival + timedelta(days=i) for i in range((departure - arrival).days)]
        with read_scope(ctx):
            p, room_type, rate_plan, fast = reservations._read_refs(
                prop.id, rt, plan, stay=(arrival, departure))
            reference = load_search_data(prop.id, [room_type], [rate_plan], arrival, departure,
                                         nights, with_counts=False)
        assert fast is not None
        fast_rules = {day: merge_rules([rule for _, _, rule in rows])
                      for day, rows in fast.restrictions.items()}
        assert fast_rules == reference.rules_for(plan, rt), f"case {case}"
        assert fast.amounts == reference.rates_for(plan, rt), f"case {case}"
        rules_seen += len(fast_rules)
    assert rules_seen > 50


# -- the folio state ----------------------------------------------------------------------------

_CHARGE = ["id", "category", "description", "amount", "currency", "quantity", "business_date",
           "night", "kind", "created_at", "transaction_code", "parent_id", "reversal_of",
           "moved_from_folio", "reason"]
_PAYMENT = ["id", "amount", "currency", "method", "payment_method_id", "status", "created_at",
            "kind", "decline_code", "pre_authorization_id", "voucher_code", "external_id",
            "refund_of", "attempts"]
_STAY = ["id", "property_id", "status", "arrival_date", "departure_date", "nightly_prices",
         "rate_plan_id", "adults", "children", "confirmation_number", "currency"]


def _line(line: Any, names: list[str]) -> tuple[Any, ...]:
    out = []
    for name in names:
        value = getattr(line, name)
        if name == "amount":
            value = Decimal(str(value)).normalize()
        elif isinstance(value, uuid.UUID | str) and name in ("id", "parent_id", "reversal_of",
                                                             "moved_from_folio",
                                                             "pre_authorization_id",
                                                             "refund_of", "rate_plan_id",
                                                             "property_id"):
            value = uuid.UUID(str(value))
        out.append(value)
    return tuple(out)


def _view(state: folio_state.FolioState) -> dict[str, Any]:
    return {
        "folio": {f.name: getattr(state.folio, f.name) for f in Folio._meta.sorted_fields
                  if f.name not in ("reservation", "property")}
        | {"reservation": state.folio.reservation_id, "property": state.folio.property_id},
        "today": state.today, "stay": _line(state.stay, _STAY),
        "charges": [_line(c, _CHARGE) for c in state.charges],
        "payments": [_line(p, _PAYMENT) for p in state.payments],
        "posted_nights": state.posted_nights,
        "room_code": (state.room_code.code, state.room_code.tax_rules) if state.room_code else None,
        "packages": [(k.code, k.name, Decimal(str(k.price)), k.calculation, k.category)
                     for k in state.packages],
        "code": (state.code.code, state.code.name, state.code.category, state.code.tax_rules,
                 state.code.ledger_account) if state.code else None,
        "others": [(o.id, o.currency, o.property_id, o.balance) for o in state.others],
    }


def test_the_folio_state_function_reads_what_the_python_read_reads(ctx, pg_db):
    rnd = random.Random(2603)
    hotel, res, folio = make_fb_stay(ctx)
    folios = [folio]
    with read_scope(ctx):
        nights_taken = {c.night for c in FolioCharge.select().where(
            (FolioCharge.reservation == res.id) & (FolioCharge.kind == "room"))}
    with unit_of_work(ctx):
        for _ in range(2):
            folios.append(Folio.create(reservation=res.id, property=hotel.id,
                                       status=rnd.choice(["OPEN", "OPEN", "CLOSED"]),
                                       folio_type="GUEST" if rnd.random() < 0.5 else "EXTRA",
                                       currency=folio.currency))
        for _ in range(40):
            target = rnd.choice(folios)
            if rnd.random() < 0.6:
                night = res.arrival_date + timedelta(days=rnd.randrange(-2, 4))
                kind = rnd.choice(["room", "charge", "tax"])
                if kind == "room" and night in nights_taken:
                    kind = "charge"
                if kind == "room":
                    nights_taken.add(night)
                FolioCharge.create(
                    folio=target.id, reservation=res.id, category=rnd.choice(["room", "F&B"]),
                    description=f"line {rnd.randrange(1000)}", currency=target.currency,
                    amount=Decimal(rnd.randrange(-5000, 20000)) / 100,
                    quantity=rnd.randrange(1, 4), business_date=night,
                    night=night if kind == "room" or rnd.random() < 0.2 else None, kind=kind,
                    transaction_code=rnd.choice([None, "FB", "ROOM"]), property_id=hotel.id,
                    parent_id=rnd.choice([None, uuid.uuid4()]),
                    reason=rnd.choice([None, "a reason"]))
            else:
                FolioPayment.create(
                    folio=target.id, amount=Decimal(rnd.randrange(100, 20000)) / 100,
                    currency=target.currency, method=rnd.choice(["CARD", "CASH"]),
                    payment_method_id=rnd.choice([None, "pm_x"]),
                    status=rnd.choice(["CAPTURED", "CAPTURED", "PENDING", "DECLINED"]),
                    kind=rnd.choice(["PAYMENT", "PRE_AUTH", "REFUND"]),
                    decline_code=rnd.choice([None, "card_declined"]),
                    attempts=rnd.randrange(3), refund_of=rnd.choice([None, uuid.uuid4()]))
    compared = 0
    for target in folios:  # (the room nights: once a stay, whatever the folio)
        for code in (None, "FB", "NOPE"):
            with read_scope(ctx):
                fast = folio_state.read_state(target.id, now=ctx.now, code=code)
                row = Folio.get_by_id(target.id)
                reference = folio_state._from_models(row, ctx.now, code)
            assert _view(fast) == _view(reference), f"folio {target.id} code {code}"
            compared += 1
    # check-out's read: the guest folio and the stay's other OPEN folios with their balances
    with read_scope(ctx):
        stay = Reservation.get_by_id(res.id)
        fast = folio_state.read_guest_state(stay, lock=False, now=ctx.now)
    with read_scope(ctx):
        guest = (Folio.select().where((Folio.reservation == res.id)
                                      & (Folio.folio_type == "GUEST"))
                 .order_by((Folio.status == "OPEN").desc(), Folio.created_at.desc()).first())
        reference = folio_state._from_models(guest, ctx.now, None)
        expected_others = []
        for other in (Folio.select().where((Folio.reservation == res.id) & (Folio.id != guest.id)
                                           & (Folio.status == "OPEN")).order_by(Folio.id)):
            charged = sum((c.amount for c in other.charges), Decimal(0))
            paid = sum((p.amount for p in other.payments if p.status == "CAPTURED"), Decimal(0))
            expected_others.append((other.id, other.currency, other.property_id, charged - paid))
    reference.others = [SimpleNamespace(id=o[0], currency=o[1], property_id=o[2], balance=o[3])
                        for o in expected_others]
    assert _view(fast) == _view(reference)
    assert compared == 9 and fast.charges and fast.payments


# -- selling the nights of a booking ------------------------------------------------------------

class _Undo(Exception):
    """Raised to roll a unit of work back after reading what it wrote."""


def test_the_take_function_sells_what_the_python_take_sells(ctx, pg_db):
    rnd = random.Random(2604)
    hotel = make_booking_hotel(ctx, rooms=4)
    prop, rt = hotel.prop, hotel.room_type.id
    base = hotel.today + timedelta(days=3)
    days = [base + timedelta(days=i) for i in range(14)]
    with unit_of_work(ctx):
        for room in hotel.rooms[:2]:
            begin = rnd.choice(days)
            Maintenance.create(property=prop.id, room=room.id,
                               kind=rnd.choice(["OUT_OF_ORDER", "OUT_OF_SERVICE"]),
                               from_date=begin, to_date=begin + timedelta(days=rnd.randrange(4)))
        for day in days:
            InventoryDay.update(sold=rnd.choice([0, 0, 1, 2, 3]),
                                sell_limit=rnd.choice([None, None, 0, 2, 3, 9])).where(
                (InventoryDay.room_type == rt) & (InventoryDay.date == day)).execute()
    # allotments of two plans that hold rooms until their release (or only cap), some sold
    channel = [hotel.rate_plan.id, make_rate_plan(ctx, prop.id).id]
    with unit_of_work(ctx):
        for plan in channel:
            for day in days:
                if rnd.random() < 0.6:
                    RatePlanAllotment.create(property=prop.id, rate_plan=plan, room_type=rt,
                                             date=day, allotment=rnd.randrange(0, 3),
                                             release_days=rnd.choice([None, 1, 5, 30]))
    for _ in range(3):
        made = make_reservation(ctx, hotel)
        arrival = rnd.choice(days)
        with unit_of_work(ctx):
            Reservation.update(arrival_date=arrival,
                               departure_date=arrival + timedelta(days=rnd.randrange(1, 4)),
                               rate_plan=rnd.choice(channel)).where(
                Reservation.id == made.id).execute()
    plans = [None, *channel, make_rate_plan(ctx, prop.id).id]

    def outcome(take, nights, count):
        answer: Any = None
        try:
            with unit_of_work(ctx):
                try:
                    take(nights, count)
                    answer = "sold"
                except RoomTypeUnavailable as exc:
                    answer = ("short", tuple(exc.extra["nights"]), exc.detail)
                after = [(r.date, r.sold, r.physical, r.ooo, r.oos) for r in InventoryDay.select()
                         .where((InventoryDay.room_type == rt) & InventoryDay.date.in_(days))
                         .order_by(InventoryDay.date)]
                raise _Undo
        except _Undo:
            pass
        return answer, after

    sold = short = 0
    for case in range(60):
        start = rnd.randrange(len(days) - 1)
        nights = days[start:start + rnd.randrange(1, 5)]
        count = rnd.choice([1, 1, 2, 3])
        plan = rnd.choice(plans)
        fast = outcome(lambda n, c, p=plan: inventory._take_in_one(prop.id, rt, n, c, None,
                                                                   None, p), nights, count)
        reference = outcome(lambda n, c, p=plan: inventory._take_by_models(prop.id, rt, n, c, p),
                            nights, count)
        assert fast == reference, f"case {case}: {nights} x {count} on {plan}"
        sold += fast[0] == "sold"
        short += fast[0] != "sold"
    assert sold > 5 and short > 5


# -- a rate plan's allotment ----------------------------------------------------------

def test_the_allotment_counts_in_sql_count_what_the_python_reference_counts(ctx, pg_db):
    """`pms.queries.allotments`: the statement the booking (under its night locks) and the
    search use against the reference path (rows read, counted in Python), on allotments of two
    plans and two room types, reservations of every status on those and another plan, stays
    touching the window's edges, filters by plan, room type and an excluded reservation; and
    the search's load (`load_search_data`) against the reference's rooms left."""
    from pms.domain.availability import allotment_left
    from pms.models.catalog import RatePlan
    from pms.models.property import RoomType
    from pms.models.rates import RatePlanAllotment
    from pms.queries.allotments import allotment_counts

    rnd = random.Random(3501)
    hotel = make_booking_hotel(ctx, rooms=30)
    prop = hotel.prop
    types = [hotel.room_type.id, make_room_type(ctx, prop.id).id]
    plans = [hotel.rate_plan.id, make_rate_plan(ctx, prop.id).id]
    bystander = make_rate_plan(ctx, prop.id).id  # no allotment
    base = hotel.today + timedelta(days=30)
    made = [make_reservation(ctx, hotel) for _ in range(24)]
    with unit_of_work(ctx):
        for plan in plans:
            for rt in types:
                for day in range(20):
                    if rnd.random() < 0.7:
                        RatePlanAllotment.create(property=prop.id, rate_plan=plan, room_type=rt,
                                                 date=base + timedelta(days=day),
                                                 allotment=rnd.randrange(0, 6),
                                                 release_days=rnd.choice([None, 0, 3, 40]))
        for row in made:
            arrival = base + timedelta(days=rnd.randrange(-4, 22))
            Reservation.update(
                arrival_date=arrival, departure_date=arrival + timedelta(days=rnd.randrange(1, 7)),
                status=rnd.choice(["CONFIRMED", "CONFIRMED", "CHECKED_IN", "CHECKED_OUT",
                                   "CANCELLED", "NO_SHOW"]),
                rate_plan=rnd.choice([*plans, bystander]), room_type=rnd.choice(types)).where(
                Reservation.id == row.id).execute()
    compared = capped = 0
    for case in range(60):
        start = base + timedelta(days=rnd.randrange(-3, 20))
        count = rnd.randrange(1, 10)
        filters = {"rate_plan_id": rnd.choice([None, *plans, bystander]),
                   "room_type_id": rnd.choice([None, *types]),
                   "exclude": rnd.choice([None, None, rnd.choice(made).id])}
        with read_scope(ctx):
            fast = allotment_counts(prop.id, start, count, **filters)
            ref = allotment_counts(prop.id, start, count, reference=True, **filters)
        assert fast == ref, f"case {case}: {start} +{count} {filters}"
        compared += 1
        capped += sum(1 for nights in ref.values() for a, sold, _release in nights.values()
                      if allotment_left(a, sold) == 0)
    assert compared == 60 and capped > 10  # the data has nights used up and nights left
    # the search's load: the same rooms left per (plan, room type) and night
    with read_scope(ctx):
        rts = list(RoomType.select().where(RoomType.property == prop.id))
        rps = list(RatePlan.select().where(RatePlan.property == prop.id))
        nights = [base + timedelta(days=i) for i in range(12)]
        data = load_search_data(prop.id, rts, rps, nights[0], nights[-1] + timedelta(days=1),
                                nights)
        ref = allotment_counts(prop.id, nights[0], len(nights), reference=True)
    expected = {key: [allotment_left(*per[i][:2]) if i in per else None
                      for i in range(len(nights))]
                for key, per in ref.items()}
    assert data.allotments == expected and expected


def test_the_folio_state_function_reads_a_block_master_folio_as_the_python_read(ctx, pg_db):
    """a room block's master folio (no stay) through `pms_folio_state`'s outer join
    and through the models: the same state, no stay fields, no nights, no packages."""
    from pms.models import RoomBlock
    from pms.services.cashiering.master_folios import open_master_folio

    hotel, _, _ = make_fb_stay(ctx)
    with unit_of_work(ctx):
        block = RoomBlock.create(property=hotel.id, code="MF", name="Group",
                                 arrival_date=hotel.today, departure_date=hotel.today,
                                 cutoff_date=hotel.today, rate_plan_id=hotel.rate_plan.id,
                                 status="INQUIRY")
        master = open_master_folio(block)
        for amount in ("12.50", "-2.50"):
            FolioCharge.create(folio=master.id, reservation=None, category="F&B",
                               description="line", currency=master.currency,
                               amount=Decimal(amount), quantity=1, business_date=hotel.today,
                               kind="charge", property_id=hotel.id)
        FolioPayment.create(folio=master.id, amount=Decimal("5"), currency=master.currency,
                            method="CASH", status="CAPTURED")
    for code in (None, "FB"):
        with read_scope(ctx):
            fast = folio_state.read_state(master.id, now=ctx.now, code=code)
            reference = folio_state._from_models(Folio.get_by_id(master.id), ctx.now, code)
        assert _view(fast) == _view(reference)
        assert fast.folio.block_id == block.id and fast.stay.status is None
        assert len(fast.charges) == 2 and not fast.posted_nights and not fast.packages
