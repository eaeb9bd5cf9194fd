"""The money column reads back with the same scale on both databases (SQLite answered
"300" where PostgreSQL answered "300.0000")."""

from __future__ import annotations

from decimal import Decimal

from pms.db.uow import read_scope
from pms.models import FolioPayment, Reservation
from tests.factories import make_booking_hotel, make_checked_in, pay_folio


def test_money_keeps_two_decimal_places_on_read(ctx, database):
    # Given a stay whose folio holds whole and fractional amounts
    hotel = make_booking_hotel(ctx, rooms=1, amount="300")
    res = make_checked_in(ctx, hotel)
    pay_folio(ctx, res, "300")
    # When the rows are read back from the database
    with read_scope(ctx):
        stay = Reservation.get_by_id(res.id)
        payment = FolioPayment.select().order_by(FolioPayment.created_at.desc()).first()
    # Then every amount renders with two places, identically on SQLite and PostgreSQL
    assert str(stay.total_amount) == "600.00"
    assert str(stay.room_total) == "600.00"
    assert str(payment.amount) == "300.00"


def test_money_keeps_a_third_significant_place(ctx, database):
    from pms.db.fields import money_scale

    assert str(money_scale(Decimal("12.3450"))) == "12.345"
    assert str(money_scale(Decimal("12.3400"))) == "12.34"
    assert str(money_scale(Decimal(300))) == "300.00"
