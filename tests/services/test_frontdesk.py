"""Front desk services: check-in, check-out, folio on occupancy, revert, no-show, split, rooms."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from pms.db.uow import read_scope
from pms.errors import Conflict, FolioNotClosable, InvalidTransition, RoomUnavailable
from pms.models import Folio, FolioCharge, Reservation, Room, RoomStay
from pms.schemas.reservations import CheckInIn, RevertIn, RoomAssignIn, SplitIn
from pms.services.cashiering import folios
from pms.services.frontdesk import checkin, checkout
from pms.services.reservations import stays
from tests.factories import make_booking_hotel, make_checked_in, make_reservation, pay_folio
from tests.helpers import EOD_OVERRIDE, counts, outbox_types


@pytest.fixture
def hotel(ctx, database):
    return make_booking_hotel(ctx, rooms=3, amount="100.00")


def _room(ctx, room_id):
    with read_scope(ctx):
        return Room.get_by_id(room_id)


def _open_folios(ctx, reservation_id):
    with read_scope(ctx):
        return list(Folio.select().where((Folio.reservation == reservation_id)
                                         & (Folio.status == "OPEN")))


def test_check_in_makes_room_occupied_and_opens_one_folio(ctx, hotel):
    row = make_reservation(ctx, hotel)
    before = counts(ctx)
    row = checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number="101"))
    assert row.status == "CHECKED_IN"
    room = _room(ctx, row.room_id)
    assert room.room_number == "101" and room.status == "OCCUPIED"
    opened = _open_folios(ctx, row.id)
    assert len(opened) == 1 and opened[0].room_number == "101"
    assert counts(ctx) == (before[0] + 1, before[1] + 1)
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:checked_in"


def test_check_in_auto_assigns_a_vacant_room_of_the_booked_type(ctx, hotel):
    row = make_checked_in(ctx, hotel)
    assert _room(ctx, row.room_id).room_type_id == hotel.room_type.id


def test_check_in_refuses_an_occupied_room(ctx, hotel):
    make_checked_in(ctx, hotel, room_number="100")
    other = make_reservation(ctx, hotel)
    with pytest.raises(RoomUnavailable):
        checkin.check_in(ctx, hotel.id, other.id, CheckInIn(room_number="100"))


def test_check_in_twice_is_an_invalid_transition(ctx, hotel):
    row = make_checked_in(ctx, hotel)
    with pytest.raises(InvalidTransition):
        checkin.check_in(ctx, hotel.id, row.id, CheckInIn())


def test_check_in_before_arrival_date_is_refused(ctx, hotel):
    row = make_reservation(ctx, hotel, arrival_date=(hotel.today + timedelta(days=1)).isoformat(),
                           departure_date=(hotel.today + timedelta(days=3)).isoformat())
    with pytest.raises(Conflict) as err:
        checkin.check_in(ctx, hotel.id, row.id, CheckInIn())
    assert err.value.code == "check_in_too_early"


def test_check_out_with_balance_is_refused_with_the_balance(ctx, hotel):
    row = make_checked_in(ctx, hotel)
    before = counts(ctx)
    with pytest.raises(FolioNotClosable) as err:
        checkout.check_out(ctx, hotel.id, row.id)
    assert err.value.extra["balance"] == "100.00"  # the first night, posted at check-out
    assert err.value.extra["currency"] == "EUR"
    assert counts(ctx) == before  # nothing written: the posting rolled back with the refusal
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).status == "CHECKED_IN"


def test_check_out_posts_room_nights_once_closes_folio_and_dirties_room(ctx, hotel):
    row = make_checked_in(ctx, hotel)
    pay_folio(ctx, row, "100.00")
    row = checkout.check_out(ctx, hotel.id, row.id)
    assert row.status == "CHECKED_OUT"
    room = _room(ctx, row.room_id)
    assert (room.status, room.hk_status) == ("VACANT", "DIRTY")
    with read_scope(ctx):
        folio = folios.guest_folio(row)
        assert folio.status == "CLOSED"
        assert folios.folio_balance(folio) == 0
        charges = list(FolioCharge.select().where(FolioCharge.reservation == row.id))
        assert [c.night for c in charges] == [hotel.today]
        assert not RoomStay.select().where(RoomStay.reservation == row.id).exists()
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:checked_out"


def test_room_charges_are_posted_once_per_night(ctx, hotel):
    from pms.db.uow import unit_of_work

    row = make_checked_in(ctx, hotel)
    last = hotel.today + timedelta(days=1)
    with unit_of_work(ctx):
        assert len(folios.post_room_charges(row, last, business_date=hotel.today)) == 2
    with unit_of_work(ctx):
        assert folios.post_room_charges(row, last, business_date=hotel.today) == []
    with read_scope(ctx):
        assert folios.folio_balance(folios.guest_folio(row)) == Decimal("200.00")


# -- revert -------------------------------------------------------------------------------------

def test_revert_check_in_returns_to_confirmed_with_reason_on_audit(ctx, hotel):
    from pms.models import AuditEntry

    row = make_checked_in(ctx, hotel, room_number="101")
    row = stays.revert(ctx, hotel.id, row.id, RevertIn(reason="wrong guest"))
    assert row.status == "CONFIRMED"
    assert _room(ctx, row.room_id).status == "VACANT"
    with read_scope(ctx):
        entry = AuditEntry.select().order_by(AuditEntry.created_at.desc()).first()
    assert (entry.action, entry.reason) == ("reservation.reverted_check_in", "wrong guest")
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:reverted_check_in"
    again = checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number="101"))
    assert len(_open_folios(ctx, again.id)) == 1


def test_revert_check_out_reopens_folio_and_room(ctx, hotel):
    row = make_checked_in(ctx, hotel, room_number="102")
    pay_folio(ctx, row, "100.00")
    checkout.check_out(ctx, hotel.id, row.id)
    row = stays.revert(ctx, hotel.id, row.id, RevertIn(reason="guest came back"))
    assert row.status == "CHECKED_IN"
    assert _room(ctx, row.room_id).status == "OCCUPIED"
    assert len(_open_folios(ctx, row.id)) == 1


def test_revert_outside_the_business_date_is_refused(ctx, hotel):
    from pms.db.uow import unit_of_work
    from pms.models import Property

    row = make_checked_in(ctx, hotel)
    with unit_of_work(ctx):
        Property.update(business_date=hotel.today + timedelta(days=1)).where(
            Property.id == hotel.id).execute()
    with pytest.raises(Conflict) as err:
        stays.revert(ctx, hotel.id, row.id, RevertIn(reason="too late"))
    assert err.value.code == "revert_window_closed"


def test_revert_of_a_confirmed_reservation_is_invalid(ctx, hotel):
    row = make_reservation(ctx, hotel)
    with pytest.raises(InvalidTransition):
        stays.revert(ctx, hotel.id, row.id, RevertIn(reason="nothing to undo"))


# -- no-show ------------------------------------------------------------------------------------

def test_no_show_releases_nights_and_charges_the_no_show_fee(ctx, database):
    from pms.models.inventory import InventoryDay

    hotel = make_booking_hotel(ctx, rooms=1, amount="90.00", rate_plan={
        "no_show_policy": {"fee_type": "PERCENT", "fee_value": "50"}})
    row = make_reservation(ctx, hotel)
    row = stays.no_show(ctx, hotel.id, row.id)
    assert row.status == "NO_SHOW" and row.no_show_fee == Decimal("90.00")
    with read_scope(ctx):
        assert {d.sold for d in InventoryDay.select().where(
            InventoryDay.room_type == hotel.room_type.id)} == {0}


def test_no_show_before_arrival_is_refused(ctx, hotel):
    row = make_reservation(ctx, hotel, arrival_date=(hotel.today + timedelta(days=2)).isoformat(),
                           departure_date=(hotel.today + timedelta(days=3)).isoformat())
    with pytest.raises(Conflict) as err:
        stays.no_show(ctx, hotel.id, row.id)
    assert err.value.code == "not_yet_arrival"


# -- split --------------------------------------------------------------------------------------

def test_split_makes_two_consecutive_reservations_inventory_unchanged(ctx, hotel):
    from pms.models.inventory import InventoryDay

    row = make_reservation(ctx, hotel, departure_date=(hotel.today + timedelta(days=3)).isoformat())

    def sold():
        with read_scope(ctx):
            return {d.date: d.sold for d in InventoryDay.select().where(
                InventoryDay.room_type == hotel.room_type.id)}

    before, events = sold(), len(outbox_types(ctx))
    first, second = stays.split(ctx, hotel.id, row.id, SplitIn(split_date=hotel.today + timedelta(days=1)))
    assert (first.arrival_date, first.departure_date) == (hotel.today, hotel.today + timedelta(days=1))
    assert (second.arrival_date, second.departure_date) == (hotel.today + timedelta(days=1),
                                                            hotel.today + timedelta(days=3))
    assert first.confirmation_number != second.confirmation_number
    assert second.split_from == first.id
    assert (first.total_amount, second.total_amount) == (Decimal("100.00"), Decimal("200.00"))
    assert sold() == before
    assert len(outbox_types(ctx)) == events + 1


def test_split_date_outside_the_stay_is_refused(ctx, hotel):
    from pms.errors import ValidationFailed

    row = make_reservation(ctx, hotel)
    with pytest.raises(ValidationFailed):
        stays.split(ctx, hotel.id, row.id, SplitIn(split_date=hotel.today))


# -- room assignment and move -------------------------------------------------------------------

def test_two_stays_cannot_hold_one_room_on_overlapping_nights(ctx, hotel):
    a = make_reservation(ctx, hotel)
    b = make_reservation(ctx, hotel, arrival_date=(hotel.today + timedelta(days=1)).isoformat(),
                         departure_date=(hotel.today + timedelta(days=3)).isoformat())
    stays.assign_room(ctx, hotel.id, a.id, RoomAssignIn(room_number="100"))
    with pytest.raises(RoomUnavailable):
        stays.assign_room(ctx, hotel.id, b.id, RoomAssignIn(room_number="100"))
    # Consecutive stays may share the room.
    c = make_reservation(ctx, hotel, arrival_date=(hotel.today + timedelta(days=2)).isoformat(),
                         departure_date=(hotel.today + timedelta(days=3)).isoformat())
    assert stays.assign_room(ctx, hotel.id, c.id, RoomAssignIn(room_number="100")).room_id


@pytest.mark.postgres
def test_exclusion_constraint_refuses_overlapping_room_stays(ctx, pg_db):
    import peewee

    from pms.db.uow import unit_of_work

    hotel = make_booking_hotel(ctx, rooms=1)
    a = make_reservation(ctx, hotel)
    with pytest.raises(peewee.IntegrityError), unit_of_work(ctx):
        for _ in range(2):
            RoomStay.create(reservation=a.id, property=hotel.id, room=hotel.rooms[0].id,
                            start_date=hotel.today, end_date=hotel.today + timedelta(days=2))


def test_check_in_uses_the_assigned_room(ctx, hotel):
    row = make_reservation(ctx, hotel)
    stays.assign_room(ctx, hotel.id, row.id, RoomAssignIn(room_number="102"))
    row = checkin.check_in(ctx, hotel.id, row.id, CheckInIn())
    assert _room(ctx, row.room_id).room_number == "102"


def test_room_of_another_type_is_refused(ctx, hotel):
    from tests.factories import make_room, make_room_type

    other_type = make_room_type(ctx, hotel.id)
    make_room(ctx, hotel.id, other_type.id, room_number="900")
    row = make_reservation(ctx, hotel)
    with pytest.raises(RoomUnavailable) as err:
        checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number="900"))
    assert err.value.code == "room_type_mismatch"


def test_out_of_order_room_is_refused_at_check_in(ctx, hotel):
    from pms.db.uow import unit_of_work
    from pms.models.inventory import Maintenance

    with unit_of_work(ctx):
        Maintenance.create(property=hotel.id, room=hotel.rooms[0].id, kind="OUT_OF_ORDER",
                           from_date=hotel.today, to_date=hotel.today + timedelta(days=5))
    row = make_reservation(ctx, hotel)
    with pytest.raises(RoomUnavailable):
        checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number=hotel.rooms[0].room_number))


def test_room_whose_maintenance_ends_on_the_arrival_night_is_refused(ctx, hotel):
    from pms.db.uow import unit_of_work
    from pms.models.inventory import Maintenance

    # to_date is the last night out of service: tonight is still blocked
    with unit_of_work(ctx):
        Maintenance.create(property=hotel.id, room=hotel.rooms[0].id, kind="OUT_OF_SERVICE",
                           from_date=hotel.today - timedelta(days=3), to_date=hotel.today)
    row = make_reservation(ctx, hotel)
    with pytest.raises(RoomUnavailable):
        checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number=hotel.rooms[0].room_number))


def test_room_move_in_house_moves_folio_and_occupancy(ctx, hotel):
    row = make_checked_in(ctx, hotel, room_number="100")
    row = stays.assign_room(ctx, hotel.id, row.id, RoomAssignIn(room_number="101"))
    assert _room(ctx, row.room_id).room_number == "101"
    with read_scope(ctx):
        old = Room.get((Room.property == hotel.id) & (Room.room_number == "100"))
        assert (old.status, old.hk_status) == ("VACANT", "DIRTY")
        assert Room.get_by_id(row.room_id).status == "OCCUPIED"
    assert _open_folios(ctx, row.id)[0].room_number == "101"
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:room_moved"


# -- edit of an in-house stay --------------------------------------------------------------------

def test_extending_an_in_house_stay_keeps_the_room(ctx, hotel):
    from pms.schemas.reservations import ReservationPatch
    from pms.services.reservations import reservations

    row = make_checked_in(ctx, hotel, room_number="100")
    new_departure = hotel.today + timedelta(days=4)
    row = reservations.edit_reservation(ctx, hotel.id, row.id,
                                        ReservationPatch(departure_date=new_departure))
    with read_scope(ctx):
        hold = RoomStay.get(RoomStay.reservation == row.id)
    assert hold.end_date == new_departure and row.total_amount == Decimal("400.00")
    with pytest.raises(Conflict):
        reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(
            arrival_date=hotel.today + timedelta(days=1)))


def test_editing_dates_keeps_a_free_assigned_room_and_drops_a_taken_one(ctx, hotel):
    from pms.schemas.reservations import ReservationPatch
    from pms.services.reservations import reservations

    row = make_reservation(ctx, hotel)
    stays.assign_room(ctx, hotel.id, row.id, RoomAssignIn(room_number="100"))
    later = hotel.today + timedelta(days=3)
    blocker = make_reservation(ctx, hotel, arrival_date=later.isoformat(),
                               departure_date=(later + timedelta(days=1)).isoformat())
    stays.assign_room(ctx, hotel.id, blocker.id, RoomAssignIn(room_number="100"))
    row = reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(
        departure_date=hotel.today + timedelta(days=3)))
    assert row.room_id == hotel.rooms[0].id
    row = reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(
        departure_date=hotel.today + timedelta(days=4)))
    assert row.room_id is None  # room 100 is held on the new last night: unassigned
    with read_scope(ctx):
        assert not RoomStay.select().where(RoomStay.reservation == row.id).exists()


def test_extending_an_in_house_stay_into_a_held_room_is_refused(ctx, hotel):
    from pms.schemas.reservations import ReservationPatch
    from pms.services.reservations import reservations

    row = make_checked_in(ctx, hotel, room_number="100")
    later = hotel.today + timedelta(days=2)
    nxt = make_reservation(ctx, hotel, arrival_date=later.isoformat(),
                           departure_date=(later + timedelta(days=1)).isoformat())
    stays.assign_room(ctx, hotel.id, nxt.id, RoomAssignIn(room_number="100"))
    with pytest.raises(RoomUnavailable):
        reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(
            departure_date=hotel.today + timedelta(days=3)))


def test_a_room_marked_out_of_order_by_housekeeping_is_not_given(ctx, hotel):
    from pms.db.uow import unit_of_work

    with unit_of_work(ctx):
        Room.update(hk_status="OUT_OF_ORDER").where(Room.id == hotel.rooms[0].id).execute()
    row = make_reservation(ctx, hotel)
    with pytest.raises(RoomUnavailable):
        checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number=hotel.rooms[0].room_number))
    row = checkin.check_in(ctx, hotel.id, row.id, CheckInIn())
    assert row.room_id != hotel.rooms[0].id


# -- check-out hooks, projected folio, early check-out, credit balance -------------

def test_check_out_hooks_are_explicit_and_no_import_error_is_swallowed(ctx, hotel):
    import inspect
    import sys

    row = make_checked_in(ctx, hotel)
    pay_folio(ctx, row, "100.00")
    before = set(sys.modules)
    calls = []

    def broken(uow, reservation):
        calls.append(reservation.id)
        raise ImportError("a broken import inside a check-out capability")

    # Given a hook that fails the way a broken module would, it is not swallowed: nothing commits
    with pytest.raises(ImportError):
        checkout.check_out(ctx, hotel.id, row.id, hooks=[broken])
    assert calls == [row.id]
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).status == "CHECKED_IN"
    # And check-out imports nothing on its own (no hidden pms.services.keys.keys lookup)
    done = checkout.check_out(ctx, hotel.id, row.id, hooks=[lambda uow, r: calls.append("ok")])
    assert done.status == "CHECKED_OUT" and calls[-1] == "ok"
    assert "pms.services.keys.keys" not in set(sys.modules) - before
    source = inspect.getsource(checkout)
    assert "import_module" not in source and "except ImportError" not in source
    assert all(callable(h) for h in checkout.CHECK_OUT_HOOKS)


def test_folio_shows_projected_room_nights_so_paying_the_shown_balance_checks_out(ctx, hotel):
    row = make_checked_in(ctx, hotel)
    later = ctx.with_(now=ctx.now + timedelta(days=2))  # the booked departure day
    # Given nothing is posted yet, the folio shows the two nights check-out will post
    shown = folios.get_reservation_folio(later, hotel.id, row.id)
    assert shown.charges == [] and shown.posted_balance == Decimal("0.00")
    nights = [c.night for c in shown.projected_charges if c.kind == "room"]
    assert nights == [hotel.today, hotel.today + timedelta(days=1)]
    assert all(c.projected for c in shown.projected_charges)
    assert shown.projected_total == Decimal("200.00") and shown.balance_due == Decimal("200.00")
    # When the guest pays exactly the shown balance due, check-out succeeds
    pay_folio(later, row, shown.balance_due)
    assert checkout.check_out(later, hotel.id, row.id).status == "CHECKED_OUT"
    closed = folios.get_reservation_folio(later, hotel.id, row.id)
    assert closed.projected_charges == [] and closed.balance_due == Decimal("0.00")


def test_early_check_out_ends_the_stay_on_the_business_date_and_releases_the_nights(ctx, hotel):
    from pms.models.inventory import InventoryDay
    from pms.services.night_audit.end_of_day import run_night_audit

    row = make_reservation(ctx, hotel, departure_date=(hotel.today + timedelta(days=4)).isoformat())
    row = checkin.check_in(ctx, hotel.id, row.id, CheckInIn())
    assert str(row.total_amount) == "400.00"
    day2 = ctx.with_(now=ctx.now + timedelta(days=2))  # two nights stayed of four
    pay_folio(day2, row, folios.get_reservation_folio(day2, hotel.id, row.id).balance_due)
    out = checkout.check_out(day2, hotel.id, row.id)
    # The reservation shows what was stayed: departure today, two nights, their total
    assert out.departure_date == hotel.today + timedelta(days=2)
    assert str(out.total_amount) == "200.00" and len(out.nightly_prices) == 2
    with read_scope(ctx):
        sold = {d.date: d.sold for d in InventoryDay.select().where(
            InventoryDay.room_type == hotel.room_type.id)}
    assert sold[hotel.today] == 1 and sold[hotel.today + timedelta(days=1)] == 1
    assert sold[hotel.today + timedelta(days=2)] == 0 and sold[hotel.today + timedelta(days=3)] == 0
    # And the night audit of that business date counts it as a departure
    audit = run_night_audit(day2, hotel.id, business_date=hotel.today + timedelta(days=2), override_reason=EOD_OVERRIDE)
    assert audit.figures["departures"] == 1


def test_check_out_with_a_credit_balance_is_409_saying_refund_first(ctx, hotel):
    row = make_checked_in(ctx, hotel)
    pay_folio(ctx, row, "150.00")  # one night of 100.00 due at a same-day check-out
    with pytest.raises(FolioNotClosable) as refused:
        checkout.check_out(ctx, hotel.id, row.id)
    assert refused.value.code == "folio_credit_balance"
    assert refused.value.extra["balance"] == "-50.00"
    assert "refund" in refused.value.detail
