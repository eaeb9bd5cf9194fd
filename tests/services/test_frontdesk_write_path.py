"""The front desk's writes at database speed: the rules of their shape, each pinned.

- `folio_state_renders_as_the_models`: the folio read in one statement (pms.services.cashiering.folio_state)
  renders exactly what the folio's rows say (lines, payments, totals, balance, the projected
  room nights with their tax and package lines), on both backends.
- `a_charge_...` / `a_card_payment_...` / `a_check_out_...`: what a folio charge, a card payment
  and a check-out write with the commit is in the answer and in the database (and a refused
  check-out writes nothing).

Their round trips are budgets, pinned in tests/budgets (bench.budgets).
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import msgspec
import pytest

from pms.db.database import is_postgres
from pms.db.uow import read_scope
from pms.models import Folio, FolioCharge, FolioPayment
from pms.platform.payments import EmbeddedPayments
from pms.schemas import catalog as s
from pms.schemas.cashiering import ChargeIn, PaymentIn, TransactionCodeIn
from pms.schemas.common import to_data
from pms.schemas.folios import folio_out
from pms.services.cashiering import cashiering, payments
from pms.services.cashiering.folio_state import read_state
from pms.services.cashiering.folios import render_state, totals, unposted_room_rows
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from tests.factories import (
    Hotel,
    load_rates,
    make_checked_in,
    make_package,
    make_property,
    make_room,
    make_room_type,
)
from tests.helpers import wire_tally


def _code(ctx, property_id, code, category, account):
    catalog.create_child(ctx, TRANSACTION_CODE, property_id, msgspec.convert(
        {"code": code, "name": code.title(), "category": category, "ledger_account": account,
         "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True,
                        "name": "VAT"}]}, TransactionCodeIn))


@pytest.fixture
def stay(ctx, database):
    """A checked-in 3-night stay on a plan with a breakfast package, ROOM and FB codes."""
    from pms.services.reservations.reservations import business_date

    prop = make_property(ctx)
    package = make_package(ctx, prop.id, code="BRK")
    room_type = make_room_type(ctx, prop.id)
    rooms = [make_room(ctx, prop.id, room_type.id, room_number="101")]
    plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
        {"code": "BB", "name": "Bed and breakfast", "package_codes": [package.code]},
        s.RatePlanIn))
    load_rates(ctx, prop.id, plan.id, room_type.id, amount="100.00")
    _code(ctx, prop.id, "ROOM", "room", "room_revenue")
    _code(ctx, prop.id, "FB", "F&B", "fnb_revenue")
    hotel = Hotel(prop, room_type, rooms, plan, business_date(prop, ctx.now))
    res = make_checked_in(ctx, hotel, departure_date=(hotel.today + timedelta(days=3)).isoformat())
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    return hotel, res, folio


def _reference(ctx, folio_id):
    """The folio rendered from its rows one query at a time (the shape before the write path's rework)."""
    from pms.domain.business_date import business_date
    from pms.models import Property, Reservation
    from pms.services.cashiering.folios import last_night_due

    with read_scope(ctx):
        folio = Folio.get_by_id(folio_id)
        charges = list(FolioCharge.select().where(FolioCharge.folio == folio.id)
                       .order_by(FolioCharge.created_at, FolioCharge.id))
        paid = list(FolioPayment.select().where(FolioPayment.folio == folio.id)
                    .order_by(FolioPayment.created_at, FolioPayment.id))
        charges_total, payments_total = totals(folio)
        stay = Reservation.get_by_id(folio.reservation_id)
        today = business_date(Property.get_by_id(stay.property_id), ctx.now)
        _, projected = unposted_room_rows(stay, folio.id, last_night_due(stay, today),
                                          business_date=today)
        return folio_out(folio, charges, paid, charges_total=charges_total,
                         payments_total=payments_total, projected=projected)


def test_folio_state_renders_as_the_models(ctx, stay):
    hotel, res, folio = stay
    cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
        transaction_code="FB", amount=Decimal("20.00"), quantity=2, description="Dinner"))
    payments.post_payment(ctx, hotel.id, folio.id,
                          PaymentIn(amount=Decimal("15.00"), method="CASH"), payments=None)
    payments.post_payment(ctx, hotel.id, folio.id, PaymentIn(
        amount=Decimal("5.00"), method="CARD", payment_method_id="pm_card_unavailable"),
        payments=EmbeddedPayments())  # left PENDING: listed, not counted
    with read_scope(ctx):
        state = read_state(folio.id, now=ctx.now, property_id=hotel.id)
    got, want = to_data(render_state(state)), to_data(_reference(ctx, folio.id))
    assert got == want
    assert [c["kind"] for c in got["charges"]] == ["charge", "tax"]
    assert Decimal(got["posted_balance"]) == Decimal("25.00")
    assert [p["status"] for p in got["payments"]] == ["CAPTURED", "PENDING"]
    kinds = sorted(c["kind"] for c in got["projected_charges"])
    assert kinds == ["package", "room", "tax"]  # the first night: room, its VAT, breakfast


def test_folio_state_is_refused_to_another_guest_and_another_property(ctx, stay):
    import uuid

    from pms.errors import NotFound

    hotel, res, folio = stay
    with read_scope(ctx):
        with pytest.raises(NotFound):
            read_state(folio.id, now=ctx.now, property_id=uuid.uuid4())
        with pytest.raises(NotFound):
            read_state(folio.id, now=ctx.now, property_id=hotel.id, holder_id=uuid.uuid4())


def test_a_charges_lines_are_written_with_the_commit(ctx, stay):
    hotel, res, folio = stay
    out = cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
        transaction_code="FB", amount=Decimal("10.70")))
    with read_scope(ctx):
        stored = sorted(str(c.amount) for c in FolioCharge.select().where(
            FolioCharge.folio == folio.id))
    assert stored == sorted(str(c.amount) for c in out.charges) == ["0.70", "10.00"]
    assert out == _reference(ctx, folio.id)


def test_a_card_payment_is_two_transactions_around_the_call(ctx, stay):
    hotel, res, folio = stay
    sandbox = EmbeddedPayments()
    if is_postgres():
        with wire_tally() as tally:
            out, payment = payments.post_payment(ctx, hotel.id, folio.id, PaymentIn(
                amount=Decimal("30.00"), method="CARD", payment_method_id="pm_card_visa"),
                payments=sandbox)
        assert tally.transactions == 2  # intent, call (outside any transaction), outcome
    else:
        out, payment = payments.post_payment(ctx, hotel.id, folio.id, PaymentIn(
            amount=Decimal("30.00"), method="CARD", payment_method_id="pm_card_visa"),
            payments=sandbox)
    assert payment.status == "CAPTURED" and payment.attempts == 1
    with read_scope(ctx):
        row = FolioPayment.get_by_id(payment.id)
    assert (row.status, row.attempts, row.external_id) == ("CAPTURED", 1, payment.external_id)
    assert out == _reference(ctx, folio.id)
    assert Decimal(out.payments_total) == Decimal("30.00")




def test_a_check_out_and_what_it_writes_with_the_commit(ctx, database):
    from pms.models import Room, RoomStay
    from pms.services.frontdesk import checkout
    from tests.factories import make_booking_hotel, pay_folio

    hotel = make_booking_hotel(ctx, rooms=1, amount="100.00")
    _code(ctx, hotel.id, "ROOM", "room", "room_revenue")
    res = make_checked_in(ctx, hotel, departure_date=(hotel.today + timedelta(days=1)).isoformat())
    pay_folio(ctx, res, "100.00")
    done = checkout.check_out(ctx, hotel.id, res.id)
    assert done.status == "CHECKED_OUT"
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
        lines = sorted((c.kind, str(c.amount)) for c in FolioCharge.select().where(
            FolioCharge.folio == folio.id))
        room = Room.get_by_id(res.room_id)
        holds = RoomStay.select().where(RoomStay.reservation == res.id).count()
    assert (folio.status, folio.closed_at is not None) == ("CLOSED", True)
    assert lines == [("room", "93.46"), ("tax", "6.54")]  # 7% VAT inside the night's 100.00
    assert (room.status, room.hk_status, holds) == ("VACANT", "DIRTY", 0)


def test_a_check_out_with_a_balance_writes_nothing(ctx, database):
    from pms.errors import FolioNotClosable
    from pms.models import Room
    from pms.services.frontdesk import checkout
    from tests.factories import make_booking_hotel

    hotel = make_booking_hotel(ctx, rooms=1, amount="100.00")
    res = make_checked_in(ctx, hotel, departure_date=(hotel.today + timedelta(days=1)).isoformat())
    with pytest.raises(FolioNotClosable) as refused:
        checkout.check_out(ctx, hotel.id, res.id)
    assert refused.value.extra["balance"] == "100.00"
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
        charged = FolioCharge.select().where(FolioCharge.folio == folio.id).count()
        room = Room.get_by_id(res.room_id)
    assert (folio.status, charged, room.status) == ("OPEN", 0, "OCCUPIED")




def test_a_check_in_picks_the_room_the_rule_picks(ctx, database):
    """The one-statement pick (PostgreSQL) and `auto_assign` choose the same room: not in
    maintenance on the nights, not marked out of order, not held by another stay, clean before
    dirty, by number; and check-in then takes the rooms in that order until none is left."""
    from pms.db.uow import unit_of_work
    from pms.errors import RoomUnavailable
    from pms.models import Maintenance, Reservation, Room, RoomStay
    from pms.schemas.reservations import CheckInIn
    from pms.services.frontdesk import checkin, desk_writes
    from pms.services.reservations.stays import auto_assign
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx, rooms=5)
    blocked, marked, held, dirty, clean = hotel.rooms
    today = hotel.today
    other = make_reservation(ctx, hotel)
    with unit_of_work(ctx):
        Maintenance.create(property=hotel.id, room=blocked.id, kind="OUT_OF_ORDER",
                           from_date=today, to_date=today, reason="leak")
        Room.update(hk_status="OUT_OF_ORDER").where(Room.id == marked.id).execute()
        Room.update(hk_status="DIRTY").where(Room.id == dirty.id).execute()
        RoomStay.create(reservation=other.id, property=hotel.id, room=held.id,
                        start_date=today, end_date=today + timedelta(days=2))
    guests = [make_reservation(ctx, hotel) for _ in range(3)]
    with unit_of_work(ctx):
        stay = Reservation.get_by_id(guests[0].id)
        assert auto_assign(stay, today).id == clean.id
        if is_postgres():
            assert desk_writes.pick_room(stay, today).id == clean.id
    first = checkin.check_in(ctx, hotel.id, guests[0].id, CheckInIn())
    # only a dirty room is left: the desk takes it knowingly (a reason), never silently
    with pytest.raises(RoomUnavailable) as refused:
        checkin.check_in(ctx, hotel.id, guests[1].id, CheckInIn())
    assert refused.value.code == "room_not_ready"
    second = checkin.check_in(ctx, hotel.id, guests[1].id,
                              CheckInIn(dirty_room_reason="rush clean ordered"))
    assert (first.room_id, second.room_id) == (clean.id, dirty.id)
    with pytest.raises(RoomUnavailable):
        checkin.check_in(ctx, hotel.id, guests[2].id, CheckInIn())
    with read_scope(ctx):
        rooms = {r.id: r.status for r in Room.select()}
        holds = {(h.reservation_id, h.room_id) for h in RoomStay.select()}
        folios = [(f.reservation_id, f.room_number, f.status) for f in Folio.select()]
    assert rooms[clean.id] == rooms[dirty.id] == "OCCUPIED"
    assert {(first.id, clean.id), (second.id, dirty.id)} <= holds
    assert sorted(folios, key=str) == sorted([(first.id, clean.room_number, "OPEN"),
                                              (second.id, dirty.room_number, "OPEN")], key=str)


def test_a_check_in_after_a_reverted_one_keeps_the_open_folio(ctx, database):
    """Check-in, revert, check-in again into another room: still one OPEN guest folio, now with
    the new room's number."""
    from pms.schemas.reservations import CheckInIn, RevertIn
    from pms.services.frontdesk import checkin
    from pms.services.reservations import stays
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx, rooms=2)
    guest = make_reservation(ctx, hotel)
    checkin.check_in(ctx, hotel.id, guest.id, CheckInIn(room_number=hotel.rooms[0].room_number))
    stays.revert(ctx, hotel.id, guest.id, RevertIn(reason="wrong room"))
    checkin.check_in(ctx, hotel.id, guest.id, CheckInIn(room_number=hotel.rooms[1].room_number))
    with read_scope(ctx):
        folios = [(f.room_number, f.status) for f in Folio.select().where(
            Folio.reservation == guest.id)]
    assert folios == [(hotel.rooms[1].room_number, "OPEN")]


def test_the_stay_locked_with_its_business_date_is_the_reservation_and_its_date(ctx, database):
    """`lock_stay` (one statement on PostgreSQL) answers what load_reservation and the
    property's business date answer; another guest's session and another property get 404."""
    import dataclasses
    import uuid

    from pms.db.uow import unit_of_work
    from pms.errors import NotFound
    from pms.queries.lookups import load_reservation
    from pms.services.reservations.stays import lock_stay
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx, rooms=1)
    res = make_reservation(ctx, hotel)
    with unit_of_work(ctx):
        row, today = lock_stay(ctx, hotel.id, res.id)
        want = load_reservation(ctx, hotel.id, res.id)
    assert today == hotel.today
    assert row.__data__ == want.__data__
    stranger = dataclasses.replace(ctx, holder_id=uuid.uuid4())
    for who, prop in ((stranger, hotel.id), (ctx, uuid.uuid4())):
        with pytest.raises(NotFound), unit_of_work(ctx):
            lock_stay(who, prop, res.id)


def test_a_locked_stays_new_version_goes_with_the_commit(ctx, database):
    """Check-in and check-out lock the reservation (`UnitOfWork.locked`): their events take
    the next version with no `version + 1` statement, the row's UPDATE (with that version) is
    in the COMMIT's round trip, and the versions in the database and in the events agree."""
    from pms.models import Reservation
    from pms.models.platform import OutboxEvent
    from pms.services.frontdesk import checkout
    from tests.factories import make_booking_hotel, pay_folio

    hotel = make_booking_hotel(ctx, rooms=1, amount="100.00")
    _code(ctx, hotel.id, "ROOM", "room", "room_revenue")
    if is_postgres():
        with wire_tally() as tally:
            res = make_checked_in(ctx, hotel, departure_date=str(hotel.today + timedelta(days=1)))
            pay_folio(ctx, res, "100.00")
            done = checkout.check_out(ctx, hotel.id, res.id)
        bumps = [sql for sql in tally.log if re.search(r'"?version"?\s*\+', sql)
                 and re.search(r'UPDATE\s+"?reservation"?', sql)]
        assert not bumps, bumps
        commits = [sql for sql in tally.log
                   if re.search(r'UPDATE\s+"?reservation"?\s+SET', sql)]
        # the check-in's and the check-out's UPDATE of the reservation, each with its COMMIT
        assert len(commits) == 2 and all(sql.rstrip().endswith("COMMIT") for sql in commits)
    else:
        res = make_checked_in(ctx, hotel, departure_date=str(hotel.today + timedelta(days=1)))
        pay_folio(ctx, res, "100.00")
        done = checkout.check_out(ctx, hotel.id, res.id)
    with read_scope(ctx):
        stored = Reservation.get_by_id(res.id)
        events = [(e.type.rsplit(":", 1)[1], e.aggregate_version) for e in OutboxEvent.select()
                  .where(OutboxEvent.subject == str(res.id))
                  .order_by(OutboxEvent.aggregate_version)]
    assert events == [("created", 1), ("checked_in", 2), ("checked_out", 3)]
    assert stored.version == done.version == 3
    assert (stored.status, stored.room_id) == ("CHECKED_OUT", res.room_id)


def test_a_timed_save_writes_what_the_row_holds_when_the_unit_of_work_ends(ctx, database):
    """`UnitOfWork.save` compiles the row's UPDATE when the unit of work ends (on
    PostgreSQL in the COMMIT's round trip, elsewhere just before the commit): a change made
    after the call is written too, on both backends alike; an exception writes nothing."""
    from pms.db.uow import unit_of_work
    from pms.models import Reservation
    from pms.services.reservations.stays import lock_stay
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx, rooms=1)
    res = make_reservation(ctx, hotel)
    with unit_of_work(ctx) as uow:
        row, _ = lock_stay(ctx, hotel.id, res.id)
        row.notes = "early"
        uow.save(row)
        row.notes = "late"  # after the call: still written
        uow.save(row)  # a second call queues nothing more
        assert uow._batch.count((type(row), row.id)) == 1
    with read_scope(ctx):
        assert Reservation.get_by_id(res.id).notes == "late"
    with pytest.raises(RuntimeError), unit_of_work(ctx) as uow:
        row, _ = lock_stay(ctx, hotel.id, res.id)
        row.notes = "never"
        uow.save(row)
        raise RuntimeError("abort")
    with read_scope(ctx):
        assert Reservation.get_by_id(res.id).notes == "late"


def test_two_objects_of_one_locked_row_share_its_versions(ctx, database):
    """Two events for one locked row in a unit of work, each for another object of that row
    (one loaded with the lock, one read again): they take consecutive versions, the stored
    version is the last, and the object saved last is the one written."""
    from pms.db.uow import unit_of_work
    from pms.models import Reservation
    from pms.models.platform import OutboxEvent
    from pms.queries.lookups import load_reservation
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx, rooms=1)
    res = make_reservation(ctx, hotel)
    with unit_of_work(ctx) as uow:
        first = load_reservation(ctx, hotel.id, res.id, lock=True)
        first.notes = "first"
        uow.save(first)
        uow.emit("hotel:pms:reservation:updated", first, {"n": 1})
        second = Reservation.get_by_id(res.id)  # another object of the row (its old version)
        second.notes = "second"
        uow.save(second)
        uow.emit("hotel:pms:reservation:updated", second, {"n": 2})
    with read_scope(ctx):
        stored = Reservation.get_by_id(res.id)
        versions = [e.aggregate_version for e in OutboxEvent.select()
                    .where(OutboxEvent.subject == str(res.id))
                    .order_by(OutboxEvent.aggregate_version)]
    assert versions == [1, 2, 3]
    assert (stored.version, stored.notes) == (3, "second")


def test_a_charges_ledger_posting_is_sent_after_the_commit_without_a_read(ctx, stay):
    """The PENDING posting the charge wrote with its COMMIT is sent after it from the row in
    memory: on PostgreSQL one round trip after the commit (the POSTED mark), no read of it
    (PERF, it was read again first); on both backends it ends POSTED, booked once."""
    from pms.models.cashiering import LedgerPosting
    from pms.platform.ledger import EmbeddedLedger

    hotel, res, folio = stay
    ledger = EmbeddedLedger()
    if is_postgres():
        with wire_tally() as tally:
            cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
                transaction_code="FB", amount=Decimal("10.70")), ledger=ledger)
        committed = next(i for i, sql in enumerate(tally.log) if sql.rstrip().endswith("COMMIT"))
        after = tally.log[committed + 1:]
        assert len(after) == 1 and "UPDATE" in after[0], after
        assert not [sql for sql in tally.log if re.search(r'FROM\s+"?ledger_posting', sql)]
    else:
        cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
            transaction_code="FB", amount=Decimal("10.70")), ledger=ledger)
    with read_scope(ctx):
        rows = list(LedgerPosting.select())
    assert [(p.status, p.attempts) for p in rows] == [("POSTED", 1)]
    assert len(ledger.postings) == 1


def test_a_posting_sent_meanwhile_is_not_booked_or_marked_twice(ctx, stay):
    """The after-commit send of a posting row that `reconcile_postings` sent in between: the
    ledger books it once (its idempotency key) and the POSTED mark, for PENDING rows only,
    changes nothing."""
    from pms.models.cashiering import LedgerPosting
    from pms.platform.ledger import EmbeddedLedger
    from pms.services.cashiering.ledger_postings import reconcile_postings, send_postings

    hotel, res, folio = stay
    ledger = EmbeddedLedger()
    cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
        transaction_code="FB", amount=Decimal("10.70")), ledger=None)  # left PENDING
    with read_scope(ctx):
        (pending,) = list(LedgerPosting.select())
    assert reconcile_postings(ctx, ledger) == 1
    with read_scope(ctx):
        posted = LedgerPosting.get_by_id(pending.id)
    send_postings(ctx, ledger, [pending])  # the row as the committed unit of work held it
    with read_scope(ctx):
        again = LedgerPosting.get_by_id(pending.id)
    assert len(ledger.postings) == 1
    assert (again.status, again.attempts, again.external_id, again.posted_at) == (
        "POSTED", 1, posted.external_id, posted.posted_at)
