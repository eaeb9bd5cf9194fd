"""Reservation services: create/fold, edit re-pricing, cancel fees, holder scoping; the pure fee
rules next to them."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import msgspec
import pytest

from pms.db.uow import read_scope
from pms.domain.fees import cancellation_fee, policy_fee
from pms.errors import NotFound, ReservationNotEditable, RoomTypeUnavailable, ValidationFailed
from pms.models import Reservation
from pms.models.inventory import InventoryDay
from pms.schemas.reservations import ReservationIn, ReservationPatch
from pms.services.reservations import reservations
from tests.factories import (
    load_rates,
    make_booking_hotel,
    make_profile,
    make_reservation,
    make_room,
    make_room_type,
    reservation_body,
)
from tests.helpers import counts

PRICES = [{"date": "2030-01-01", "amount": "80.00"}, {"date": "2030-01-02", "amount": "120.00"}]


@pytest.mark.parametrize("policy, fee", [
    (None, "0.00"),
    ({"fee_type": "NONE"}, "0.00"),
    ({"fee_type": "FIRST_NIGHT"}, "80.00"),
    ({"fee_type": "PERCENT", "fee_value": "25"}, "50.00"),
    ({"fee_type": "FIXED", "fee_value": "30"}, "30.00"),
    ({"fee_type": "FIXED", "fee_value": "999"}, "200.00"),   # capped at the total
])
def test_policy_fee(policy, fee):
    assert policy_fee(policy, PRICES, Decimal("200.00"), "EUR") == Decimal(fee)


def test_cancellation_is_free_before_the_deadline_and_charged_after():
    policy = {"fee_type": "FIRST_NIGHT", "deadline_hours": 24}
    arrival = date(2030, 1, 1)   # 00:00 Berlin = 2029-12-31 23:00 UTC; deadline 2029-12-30 23:00

    def fee(at):
        return cancellation_fee(policy, PRICES, Decimal("200"), "EUR", arrival=arrival,
                                timezone="Europe/Berlin", now=at)

    assert fee(datetime(2029, 12, 30, 22, 59, tzinfo=UTC)) == Decimal("0.00")
    assert fee(datetime(2029, 12, 30, 23, 0, tzinfo=UTC)) == Decimal("80.00")


@pytest.fixture
def hotel(ctx, database):
    return make_booking_hotel(ctx, rooms=1, amount="100.00")


def _sold(ctx, room_type_id):
    with read_scope(ctx):
        return {d.date: d.sold for d in InventoryDay.select().where(
            InventoryDay.room_type == room_type_id)}


def _sold_nights(ctx, room_type_id):
    """The nights with rooms sold (a room type's calendar has rows ahead of any booking)."""
    return {day: n for day, n in _sold(ctx, room_type_id).items() if n}


def _stay_nights(hotel):
    """The nights of `reservation_body`'s default stay (arrival today, two nights)."""
    return [hotel.today, hotel.today + timedelta(days=1)]


def test_fold_by_confirmation_number_sells_once(ctx, hotel):
    body = msgspec.convert(reservation_body(hotel, confirmation_number="CH-1"), ReservationIn)
    first, created = reservations.create_reservation(ctx, hotel.id, body)
    again, created_again = reservations.create_reservation(ctx, hotel.id, body)
    assert (created, created_again) == (True, False) and again.id == first.id
    assert _sold_nights(ctx, hotel.room_type.id) == dict.fromkeys(_stay_nights(hotel), 1)


def test_fold_answers_the_twin_even_when_the_last_room_is_gone(ctx, hotel):
    number = "CH-LAST"
    make_reservation(ctx, hotel, confirmation_number=number)
    row, created = reservations.create_reservation(ctx, hotel.id, msgspec.convert(
        reservation_body(hotel, confirmation_number=number), ReservationIn))
    assert not created and row.confirmation_number == number


def test_sold_out_writes_nothing(ctx, hotel):
    make_reservation(ctx, hotel)
    before = counts(ctx)
    with pytest.raises(RoomTypeUnavailable):
        make_reservation(ctx, hotel)
    assert counts(ctx) == before


def test_edit_to_another_room_type_moves_inventory_and_reprices(ctx, hotel):
    suite = make_room_type(ctx, hotel.id, max_occupancy=4)
    make_room(ctx, hotel.id, suite.id)
    load_rates(ctx, hotel.id, hotel.rate_plan.id, suite.id, amount="250.00")
    row = make_reservation(ctx, hotel)
    row = reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(
        room_type_id=suite.id, adults=3))
    assert row.room_type_id == suite.id and row.total_amount == Decimal("500.00")
    assert set(_sold(ctx, hotel.room_type.id).values()) == {0}
    assert _sold_nights(ctx, suite.id) == dict.fromkeys(_stay_nights(hotel), 1)


def test_edit_into_sold_out_nights_changes_nothing(ctx, hotel):
    later = hotel.today + timedelta(days=5)
    make_reservation(ctx, hotel, arrival_date=later.isoformat(),
                     departure_date=(later + timedelta(days=1)).isoformat())
    row = make_reservation(ctx, hotel)
    with pytest.raises(RoomTypeUnavailable):
        reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(
            arrival_date=later, departure_date=later + timedelta(days=1)))
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).arrival_date == hotel.today
    assert _sold(ctx, hotel.room_type.id)[hotel.today] == 1


def test_edit_cancelled_reservation_is_409(ctx, hotel):
    row = make_reservation(ctx, hotel)
    reservations.cancel_reservation(ctx, hotel.id, row.id)
    with pytest.raises(ReservationNotEditable):
        reservations.edit_reservation(ctx, hotel.id, row.id, ReservationPatch(adults=1))


def test_a_guest_session_books_for_itself_only(ctx, hotel):
    guest = make_profile(ctx, hotel.id)
    as_guest = ctx.with_(client_kind="guest", holder_id=guest.id)
    row = make_reservation(as_guest, hotel, guest=None)
    assert row.guest_profile_id == guest.id
    with pytest.raises(NotFound):
        make_reservation(as_guest, hotel, guest_profile_id=str(uuid.uuid4()))
    stranger = make_profile(ctx, hotel.id)
    with pytest.raises(NotFound):
        reservations.get_reservation(ctx.with_(client_kind="guest", holder_id=stranger.id),
                                     hotel.id, row.id)


def test_a_name_is_required(ctx, hotel):
    with pytest.raises(ValidationFailed):
        make_reservation(ctx, hotel, guest=None)
