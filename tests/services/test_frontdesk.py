"""Front desk services: check-in, check-out, folio on occupancy, revert, no-show, split, rooms."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from pms.db.uow import read_scope
from pms.errors import Conflict, FolioNotClosable, InvalidTransition, RoomUnavailable
from pms.models import Folio, FolioCharge, Reservation, Room, RoomStay
from pms.schemas.reservations import CheckInIn, RevertIn, RoomAssignIn, SplitIn
from pms.services import checkin, checkout, folios, stays
from tests.factories import make_booking_hotel, make_checked_in, make_reservation, pay_folio
from tests.helpers import audit_actions, counts, outbox_types


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
