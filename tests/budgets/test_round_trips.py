"""Every round-trip budget of `bench.budgets`, pinned in one place, counted on the wire.

Each test warms the statements up once (a running process has them compiled), then counts one
use case with a counting psycopg2 connection (`tests.helpers.wire_tally`: no timings) and
compares it with its named budget. What the use case does is tested beside its rule
(tests/services/test_booking_write_path.py, test_frontdesk_write_path.py,
tests/api/test_idempotency_in_transaction.py, test_policy_freshness.py); these tests only count.
`test_a_budget_test_fails_on_one_more_round_trip` is the control: one extra statement in a
use case's unit of work breaks its budget.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import msgspec
import pytest

from bench import budgets
from bench.budgets import explain
from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import Folio
from pms.platform.payments import EmbeddedPayments
from pms.schemas.cashiering import ChargeIn, PaymentIn, TransactionCodeIn
from pms.schemas.reservations import CheckInIn
from pms.services.cashiering import cashiering, payments
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from pms.services.frontdesk import checkin, checkout
from pms.services.inventory import inventory
from pms.services.reservations import reservations
from tests.factories import (
    make_booking_hotel,
    make_checked_in,
    make_reservation,
    pay_folio,
    reservation_body,
)
from tests.helpers import random_ref, wire_tally


def _hotel(ctx, rooms=3):
    made = make_booking_hotel(ctx, rooms=rooms, amount="100.00")
    inventory.ensure_inventory(ctx, made.prop.id, made.room_type.id, made.today,
                               made.today + timedelta(days=30))
    return made


_book = make_reservation  # a booking through the use case, no HTTP


def _code(ctx, property_id, code, category, account):
    catalog.create_child(ctx, TRANSACTION_CODE, property_id, msgspec.convert(
        {"code": code, "name": code.title(), "category": category, "ledger_account": account,
         "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True,
                        "name": "VAT"}]}, TransactionCodeIn))


def _stay(ctx, hotel, nights=3):
    res = make_checked_in(ctx, hotel,
                          departure_date=(hotel.today + timedelta(days=nights)).isoformat())
    with read_scope(ctx):
        return res, Folio.get(Folio.reservation == res.id)


def _counted(budget, use_case):
    with wire_tally() as tally:
        answer = use_case()
    assert tally.round_trips == budget.round_trips, explain(budget, tally.log)
    assert tally.transactions == budget.commits, explain(budget, tally.log)
    return tally, answer


def test_a_booking(ctx, database):
    hotel = _hotel(ctx)
    _book(ctx, hotel)  # compile the statements once
    _counted(budgets.BOOKING, lambda: _book(ctx, hotel))


def test_a_booking_of_a_night_with_no_calendar_row(ctx, database):
    with wiring.installed(calendar_horizon_days=2):  # rows for today and tomorrow only
        cold = make_booking_hotel(ctx, rooms=2, amount="100.00")
    _book(ctx, cold, departure_date=str(cold.today + timedelta(days=1)))
    _counted(budgets.BOOKING_COLD_NIGHT, lambda: _book(
        ctx, cold, arrival_date=str(cold.today + timedelta(days=5)),
        departure_date=str(cold.today + timedelta(days=7))))


def test_a_booking_inside_the_horizon_costs_a_booking(ctx, database):
    """A room type is born with its calendar rows: a night never booked costs nothing more."""
    fresh = make_booking_hotel(ctx, rooms=2, amount="100.00")
    _book(ctx, fresh, departure_date=str(fresh.today + timedelta(days=1)))
    _counted(budgets.BOOKING, lambda: _book(
        ctx, fresh, arrival_date=str(fresh.today + timedelta(days=5)),
        departure_date=str(fresh.today + timedelta(days=7))))


def test_a_booking_with_an_idempotency_key(api, ctx, database):
    hotel = _hotel(ctx)

    def post(key, **over):
        return api.post(f"/v1/properties/{hotel.id}/reservations",
                        reservation_body(hotel, **over), headers={"Idempotency-Key": key})

    assert post("warm", departure_date=str(hotel.today + timedelta(days=1))).status_code == 201
    _, resp = _counted(budgets.BOOKING_WITH_KEY, lambda: post(
        "counted", arrival_date=str(hotel.today + timedelta(days=1)),
        departure_date=str(hotel.today + timedelta(days=2))))
    assert resp.status_code == 201, resp.text


def test_a_profile_create_with_an_idempotency_key(api, ctx, database):
    hotel = _hotel(ctx, rooms=1)

    def post(key):
        return api.post(f"/v1/properties/{hotel.id}/profiles",
                        {"first_name": "Grace", "last_name": "Hopper", "email": f"{random_ref('g')}@example.com"},
                        headers={"Idempotency-Key": key})

    assert post("warm").status_code == 201
    _, resp = _counted(budgets.PROFILE_CREATE_WITH_KEY, lambda: post("counted"))
    assert resp.status_code == 201, resp.text


def test_a_get_of_a_property(api, ctx, database):
    made = api.post("/v1/properties", {"propertyCode": random_ref("BG").upper(),
                                       "timezone": "UTC", "currencyCode": "EUR"})
    assert made.status_code == 201, made.text
    policy = api.post("/v1/admin/policy-sets", {"name": random_ref("ps"), "rules": [
        {"effect": "deny", "scopes": ["hotel:pms:rates:read"]}]})
    assert policy.status_code == 201, policy.text
    path = f"/v1/properties/{made.json['id']}"
    assert api.get(path).status_code == 200  # the rules cached
    tally, resp = _counted(budgets.GET_PROPERTY, lambda: api.get(path))
    assert resp.status_code == 200
    assert "pms_policy_version_is" in tally.log[0]


def test_a_folio_charge(ctx, database):
    hotel = _hotel(ctx)
    _code(ctx, hotel.id, "FB", "F&B", "fnb_revenue")
    _, warm = _stay(ctx, hotel)
    cashiering.post_charge(ctx, hotel.id, warm.id, ChargeIn(transaction_code="FB",
                                                            amount=Decimal("1.07")))
    _, folio = _stay(ctx, hotel)
    _counted(budgets.CHARGE, lambda: cashiering.post_charge(
        ctx, hotel.id, folio.id, ChargeIn(transaction_code="FB", amount=Decimal("10.70"))))


def test_a_card_payment(ctx, database):
    hotel = _hotel(ctx)
    sandbox = EmbeddedPayments()

    def pay(folio):
        return payments.post_payment(ctx, hotel.id, folio.id, PaymentIn(
            amount=Decimal("30.00"), method="CARD", payment_method_id="pm_card_visa"),
            payments=sandbox)

    pay(_stay(ctx, hotel)[1])
    _, folio = _stay(ctx, hotel)
    _, (_, payment) = _counted(budgets.CARD_PAYMENT, lambda: pay(folio))
    assert payment.status == "CAPTURED"


def test_a_check_in(ctx, database):
    hotel = _hotel(ctx)
    checkin.check_in(ctx, hotel.id, make_reservation(ctx, hotel).id, CheckInIn())
    guest = make_reservation(ctx, hotel)
    tally, _ = _counted(budgets.CHECK_IN,
                        lambda: checkin.check_in(ctx, hotel.id, guest.id, CheckInIn()))
    assert len([sql for sql in tally.log if "pms_pick_room(" in sql]) == 1


def test_a_check_out(ctx, database):
    hotel = _hotel(ctx)
    _code(ctx, hotel.id, "ROOM", "room", "room_revenue")

    def departing():
        res = make_checked_in(ctx, hotel,
                              departure_date=(hotel.today + timedelta(days=1)).isoformat())
        pay_folio(ctx, res, "100.00")
        return res

    checkout.check_out(ctx, hotel.id, departing().id)
    guest = departing()
    tally, done = _counted(budgets.CHECK_OUT,
                           lambda: checkout.check_out(ctx, hotel.id, guest.id))
    assert done.status == "CHECKED_OUT"
    assert len([sql for sql in tally.log if "pms_lock_guest_folios(" in sql]) == 1


def test_a_budget_test_fails_on_one_more_round_trip(ctx, database, monkeypatch):
    """The control: a booking whose unit of work reads one row more breaks its budget."""
    hotel = _hotel(ctx)
    _book(ctx, hotel)
    real = reservations.create_reservation

    def with_a_read(ctx, property_id, body):
        with read_scope(ctx):
            db.execute_sql("SELECT 1").fetchone()
        return real(ctx, property_id, body)

    monkeypatch.setattr(reservations, "create_reservation", with_a_read)
    with pytest.raises(AssertionError, match="budget 3 round trips"):
        _counted(budgets.BOOKING, lambda: _book(ctx, hotel))


def test_every_budget_is_pinned_here():
    """A budget with no test here would be a number nobody checks."""
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    unpinned = [name for name, value in vars(budgets).items()
                if isinstance(value, budgets.Budget) and f"budgets.{name}" not in source]
    assert unpinned == []
    assert set(budgets.ALL) == {v for v in vars(budgets).values()
                                if isinstance(v, budgets.Budget)}
