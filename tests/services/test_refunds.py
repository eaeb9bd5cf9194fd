"""Refunds of a folio's credit: an overpaid stay gets its credit back (to the card of a
captured payment through the payments service, or in cash) and can then check out. The refund
never exceeds the credit nor what its payment took; card refunds follow the payment flow (PENDING
intent, call after commit with the refund's key, outcome in a second unit of work) and a crash or
an outage in between is reconciled without refunding twice. Both backends; the payments service
is the embedded sandbox, a recording fake, or a fake gateway over real HTTP.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from pms import wiring
from pms.db.uow import read_scope
from pms.errors import FolioClosed, ValidationFailed
from pms.models import FolioPayment, LedgerPosting
from pms.platform import payments as pay
from pms.schemas.cashiering import PaymentIn
from pms.schemas.refunds import RefundIn
from pms.services.cashiering import folios, payments, refunds
from pms.services.cashiering.refunds import (
    PaymentNotRefundable,
    RefundDeclined,
    RefundExceedsCredit,
    RefundExceedsPayment,
)
from pms.services.frontdesk import checkout
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import counts, outbox_types
from tests.services.test_payments_http import FakeGateway


@pytest.fixture
def hotel(ctx, database):
    return make_booking_hotel(ctx, rooms=2, amount="100.00")


@pytest.fixture
def stay(ctx, hotel):
    """A checked-in two-night stay: a check-out today posts one night of 100.00."""
    row = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = folios.guest_folio(row)
    return {"hotel": hotel, "res": row, "folio": folio.id}


def _pay(ctx, stay, amount, method="CARD", client=None, pm="pm_card_visa"):
    body = PaymentIn(amount=Decimal(amount), method=method,
                     payment_method_id=pm if method == "CARD" else None)
    _, row = payments.post_payment(ctx, stay["hotel"].id, stay["folio"], body,
                                   payments=client or pay.EmbeddedPayments())
    return row


def _refund(ctx, stay, amount, *, client=None, payment=None, method=None, ledger=None):
    body = RefundIn(amount=Decimal(amount), method=method or ("CARD" if payment else "CASH"),
                    payment_id=payment.id if payment is not None else None)
    return refunds.refund(ctx, stay["hotel"].id, stay["folio"], body,
                          payments=client or pay.EmbeddedPayments(), ledger=ledger)


def _due(ctx, stay):
    return folios.get_reservation_folio(ctx, stay["hotel"].id, stay["res"].id).balance_due


def _rows(ctx, kind="REFUND"):
    with read_scope(ctx):
        return list(FolioPayment.select().where(FolioPayment.kind == kind)
                    .order_by(FolioPayment.created_at))


class DownPayments:
    """The sandbox behind an outage switch: while `down`, refunds fail as unavailable."""

    def __init__(self, inner: pay.EmbeddedPayments) -> None:
        self.inner, self.down, self.refund_calls = inner, True, 0

    def charge(self, **kw: Any) -> Any:
        return self.inner.charge(**kw)

    def refund(self, **kw: Any) -> Any:
        self.refund_calls += 1
        if self.down:
            raise pay.PaymentsUnavailable("refunds are down")
        return self.inner.refund(**kw)


class DecliningPayments(DownPayments):
    def refund(self, **kw: Any) -> Any:
        self.refund_calls += 1
        return pay.PaymentResult(id="re_declined", status=pay.DECLINED, amount=kw["amount"],
                                 currency=kw["currency"], decline_code="card_closed")


# -- the rules ---------------------------------------------------------------------------------

def test_card_refund_of_the_credit_lets_the_overpaid_stay_check_out(ctx, stay):
    # Given a guest who paid 150.00 by card for a check-out that costs 100.00
    client = pay.EmbeddedPayments()
    paid = _pay(ctx, stay, "150.00", client=client)
    with pytest.raises(Exception) as refused:
        checkout.check_out(ctx, stay["hotel"].id, stay["res"].id)
    assert refused.value.code == "folio_credit_balance"
    assert refused.value.extra["refund_path"].endswith(f"/folios/{stay['folio']}/refunds")
    # When the desk refunds the 50.00 credit to that card
    before = counts(ctx)
    out, row = _refund(ctx, stay, "50.00", client=client, payment=paid)
    # Then the money went back on the original charge, once, and the folio is even
    assert row.status == "CAPTURED" and row.amount == Decimal("-50.00") and row.kind == "REFUND"
    assert row.refund_of == paid.id and row.payment_method_id == "pm_card_visa"
    assert client.charges[paid.external_id]["amount_refunded"] == "50.00"
    assert out.balance_due == Decimal("0.00") and out.payments_total == Decimal("100.00")
    # two changes (intent, outcome), each with its outbox and audit row
    assert counts(ctx) == (before[0] + 2, before[1] + 2)
    assert outbox_types(ctx)[-2:] == ["hotel:pms:folio:refund_initiated",
                                      "hotel:pms:folio:payment_refunded"]
    with read_scope(ctx):
        posting = LedgerPosting.get(LedgerPosting.idempotency_key == f"refund:{row.id}")
    assert posting.lines == [{"account": "guest_ledger", "debit": "50.00", "credit": "0"},
                             {"account": "payments_clearing", "debit": "0", "credit": "50.00"}]
    # And check-out now succeeds
    assert checkout.check_out(ctx, stay["hotel"].id, stay["res"].id).status == "CHECKED_OUT"


def test_cash_refund_is_one_change_and_lets_the_stay_check_out(ctx, stay):
    _pay(ctx, stay, "130.00", method="CASH", client=None)
    before = counts(ctx)
    out, row = _refund(ctx, stay, "30.00")
    assert row.status == "CAPTURED" and row.method == "CASH" and row.refund_of is None
    assert out.balance_due == Decimal("0.00")
    assert counts(ctx) == (before[0] + 1, before[1] + 1)
    assert outbox_types(ctx)[-1] == "hotel:pms:folio:payment_refunded"
    assert checkout.check_out(ctx, stay["hotel"].id, stay["res"].id).status == "CHECKED_OUT"


def test_refund_exceeding_the_folio_credit_is_409_and_writes_nothing(ctx, stay):
    client = pay.EmbeddedPayments()
    paid = _pay(ctx, stay, "150.00", client=client)
    before = counts(ctx)
    with pytest.raises(RefundExceedsCredit) as refused:
        _refund(ctx, stay, "50.01", client=client, payment=paid)
    assert refused.value.code == "refund_exceeds_credit" and refused.value.status == 409
    assert refused.value.extra["credit"] == "50.00"
    with pytest.raises(RefundExceedsCredit):
        _refund(ctx, stay, "50.01")  # cash too
    assert counts(ctx) == before and _rows(ctx) == []
    assert "amount_refunded" not in client.charges[paid.external_id]


def test_refund_credit_counts_the_nights_a_check_out_would_post(ctx, stay):
    # 100.00 paid, nothing posted yet, but a check-out today posts one night: no credit at all
    _pay(ctx, stay, "100.00", method="CASH")
    with pytest.raises(RefundExceedsCredit) as refused:
        _refund(ctx, stay, "1.00")
    assert refused.value.extra["credit"] == "0.00"


def test_refund_cannot_exceed_what_its_payment_took_less_earlier_refunds(ctx, stay):
    client = pay.EmbeddedPayments()
    card = _pay(ctx, stay, "30.00", client=client)
    _pay(ctx, stay, "120.00", method="CASH")  # credit 50.00, of which 30.00 came by card
    with pytest.raises(RefundExceedsPayment) as refused:
        _refund(ctx, stay, "40.00", client=client, payment=card)
    assert refused.value.code == "refund_exceeds_payment"
    assert refused.value.extra["refundable"] == "30.00"
    _refund(ctx, stay, "25.00", client=client, payment=card)
    with pytest.raises(RefundExceedsPayment) as again:
        _refund(ctx, stay, "10.00", client=client, payment=card)
    assert again.value.extra["refundable"] == "5.00"
    _, last = _refund(ctx, stay, "5.00", client=client, payment=card)
    assert last.status == "CAPTURED"
    assert client.charges[card.external_id]["amount_refunded"] == "30.00"
    _refund(ctx, stay, "20.00")  # the rest of the credit in cash
    assert _due(ctx, stay) == Decimal("0.00")


def test_card_refund_needs_a_captured_card_payment_of_this_folio(ctx, stay, hotel):
    cash = _pay(ctx, stay, "150.00", method="CASH")
    with pytest.raises(ValidationFailed) as no_id:
        _refund(ctx, stay, "10.00", method="CARD")
    assert no_id.value.extra["errors"][0]["field"] == "payment_id"
    with pytest.raises(ValidationFailed) as cash_id:
        _refund(ctx, stay, "10.00", method="CASH", payment=cash)
    assert cash_id.value.extra["errors"][0]["field"] == "payment_id"
    with pytest.raises(ValidationFailed) as not_card:
        _refund(ctx, stay, "10.00", method="CARD", payment=cash)
    assert "cash" in not_card.value.detail
    # another stay's card payment is no payment of this folio
    other = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        other_folio = folios.guest_folio(other).id
    foreign = _pay(ctx, {"hotel": hotel, "folio": other_folio}, "10.00")
    with pytest.raises(ValidationFailed):
        _refund(ctx, stay, "10.00", payment=foreign)
    # a card payment still PENDING took no money yet
    pending = _pay(ctx, stay, "10.00", client=DownPayments(pay.EmbeddedPayments()),
                   pm=pay.UNAVAILABLE_METHOD)
    assert pending.status == "PENDING"
    with pytest.raises(PaymentNotRefundable) as not_captured:
        _refund(ctx, stay, "10.00", payment=pending)
    assert not_captured.value.code == "payment_not_refundable"
    assert _rows(ctx) == []


def test_a_closed_folio_takes_no_refund(ctx, stay):
    _pay(ctx, stay, "100.00", method="CASH")
    checkout.check_out(ctx, stay["hotel"].id, stay["res"].id)
    with pytest.raises(FolioClosed):
        _refund(ctx, stay, "1.00")


def test_declined_refund_is_recorded_failed_and_gives_nothing_back(ctx, stay):
    client = pay.EmbeddedPayments()
    paid = _pay(ctx, stay, "150.00", client=client)
    with pytest.raises(RefundDeclined) as declined:
        _refund(ctx, stay, "50.00", client=DecliningPayments(client), payment=paid)
    assert declined.value.extra["decline_code"] == "card_closed"
    (row,) = _rows(ctx)
    assert row.status == "FAILED" and row.decline_code == "card_closed"
    assert _due(ctx, stay) == Decimal("-50.00")  # the credit is still owed
    assert outbox_types(ctx)[-1] == "hotel:pms:folio:refund_failed"
    _, again = _refund(ctx, stay, "50.00", client=client, payment=paid)  # FAILED frees it
    assert again.status == "CAPTURED"


def test_pending_refund_counts_against_the_credit_until_reconciled(ctx, stay):
    # Given a card refund the payments service did not answer
    client = pay.EmbeddedPayments()
    paid = _pay(ctx, stay, "150.00", client=client)
    down = DownPayments(client)
    _, row = _refund(ctx, stay, "50.00", client=down, payment=paid)
    assert row.status == "PENDING" and down.refund_calls == 1
    # Then the credit it may have given back is no longer refundable, and check-out still waits
    with pytest.raises(RefundExceedsCredit) as refused:
        _refund(ctx, stay, "1.00")
    assert refused.value.extra["credit"] == "0.00"
    with pytest.raises(Exception) as waits:
        checkout.check_out(ctx, stay["hotel"].id, stay["res"].id)
    assert waits.value.code == "folio_credit_balance"
    # When the reconciler runs while the service is still down, then after it is back
    assert payments.reconcile_payments(ctx, payments=down, older_than=timedelta(0)) == {
        "captured": 0, "authorized": 0, "failed": 0, "pending": 1}
    down.down = False
    assert payments.reconcile_payments(ctx, payments=down, older_than=timedelta(0))[
        "captured"] == 1
    assert payments.reconcile_payments(ctx, payments=down, older_than=timedelta(0)) == {
        "captured": 0, "authorized": 0, "failed": 0, "pending": 0}
    # Then the money went back once, and check-out succeeds
    (done,) = _rows(ctx)
    assert done.status == "CAPTURED"
    assert client.charges[paid.external_id]["amount_refunded"] == "50.00"
    assert checkout.check_out(ctx, stay["hotel"].id, stay["res"].id).status == "CHECKED_OUT"


# -- over real HTTP, against the fake gateway ------------------------------------------------------

class RefundingGateway(FakeGateway):
    """The fake gateway with `POST /proxy/payments/v1/refunds` (declines over-refunds)."""

    def __init__(self) -> None:
        super().__init__()
        self.refunds: list[dict[str, Any]] = []
        self.refund_bodies: list[dict[str, Any]] = []

    def _process(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path != "/proxy/payments/v1/refunds":
            return super()._process(path, body)
        self.refund_bodies.append(body)
        charge = next((c for c in self.charges if c["id"] == body["charge"]), None)
        done = sum((Decimal(r["amount"]) for r in self.refunds if r["charge"] == body["charge"]),
                   Decimal(0))
        ok = charge is not None and done + Decimal(body["amount"]) <= Decimal(charge["amount"])
        result = {"id": f"re_{len(self.refund_bodies)}", "amount": body["amount"],
                  "currency": body["currency"], "charge": body["charge"],
                  "status": "succeeded" if ok else "declined",
                  "decline_code": None if ok else "amount_exceeds_charge"}
        if ok:
            self.refunds.append(result)
        return result


@pytest.fixture
def gateway():
    fake = RefundingGateway()
    yield fake
    fake.close()


def _http(gateway, timeout_s=0.5):
    client = pay.build(gateway.settings())
    client.http.timeout_s = timeout_s
    return client


class Crash(BaseException):
    """The process 'dies' (not an Exception, so nothing on the way catches it)."""


class CrashingRefunds:
    def __init__(self, inner: Any, *, after_call: bool) -> None:
        self.inner, self.after_call = inner, after_call

    def refund(self, **kw: Any) -> Any:
        if self.after_call:
            self.inner.refund(**kw)
        raise Crash("died around the refund call")


def test_http_refund_sends_the_charge_amount_at_scale_and_a_stable_idempotency_key(ctx, stay,
                                                                                 gateway):
    client = _http(gateway)
    paid = _pay(ctx, stay, "150.00", client=client)
    _, row = _refund(ctx, stay, "50.00", client=client, payment=paid)
    assert row.status == "CAPTURED" and row.external_id == "re_1"
    assert gateway.refund_bodies == [{"charge": paid.external_id, "amount": "50.00",
                                      "currency": "EUR", "metadata": {
                                          "folio_id": str(stay["folio"]),
                                          "payment_id": str(paid.id),
                                          # the env goes with every payment call
                                          "env_id": str(ctx.env_id)}}]
    assert (("POST", "/proxy/payments/v1/refunds", f"refund:{row.id}") in gateway.by_key)
    # the same key asked again replays the first answer: no second refund
    again = client.refund(charge_id=paid.external_id, amount=Decimal("50.00"), currency="EUR",
                          idempotency_key=row.idempotency_key)
    assert again.id == "re_1" and len(gateway.refunds) == 1


def test_http_refund_outage_leaves_pending_then_reconciles_once(ctx, stay, gateway):
    client = _http(gateway)
    paid = _pay(ctx, stay, "150.00", client=client)
    gateway.faults.append("timeout")
    slow = _http(gateway, timeout_s=0.3)
    _, row = _refund(ctx, stay, "50.00", client=slow, payment=paid)
    assert row.status == "PENDING" and len(gateway.refunds) == 1  # done; we did not hear back
    assert payments.reconcile_payments(ctx, payments=client, older_than=timedelta(0))[
        "captured"] == 1
    assert len(gateway.refunds) == 1 and _rows(ctx)[0].status == "CAPTURED"
    assert _due(ctx, stay) == Decimal("0.00")


@pytest.mark.parametrize("after_call", [False, True], ids=["before-call", "after-call"])
def test_crash_around_the_refund_call_is_reconciled_without_refunding_twice(ctx, stay, gateway,
                                                                           after_call):
    client = _http(gateway)
    paid = _pay(ctx, stay, "150.00", client=client)
    with pytest.raises(Crash):
        _refund(ctx, stay, "50.00", client=CrashingRefunds(client, after_call=after_call),
                payment=paid)
    (row,) = _rows(ctx)
    assert row.status == "PENDING" and len(gateway.refunds) == (1 if after_call else 0)
    assert payments.reconcile_payments(ctx, payments=client, older_than=timedelta(0))[
        "captured"] == 1
    assert len(gateway.refunds) == 1 and _rows(ctx)[0].status == "CAPTURED"
    assert checkout.check_out(ctx, stay["hotel"].id, stay["res"].id).status == "CHECKED_OUT"


# -- concurrent refunds of one credit (PostgreSQL row locks), with the control run -------------

def _race(ctx, stay, *, threads: int, pause: Any) -> list[Any]:
    from pms.db.database import db
    from pms.errors import PmsError

    results: list[Any] = []

    def one() -> None:
        try:
            results.append(_refund(ctx, stay, "50.00")[1].status)
        except PmsError as exc:
            results.append(exc.code)
        finally:
            if not db.is_closed():
                db.close()

    with wiring.installed(pause_after_credit_check=pause):
        workers = [threading.Thread(target=one) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join(60)
    return results


@pytest.mark.postgres
def test_concurrent_refunds_never_give_back_more_than_the_credit(ctx, pg_db):
    stay = _pg_stay(ctx)
    results = _race(ctx, stay, threads=4, pause=lambda: time.sleep(0.2))
    assert sorted(results) == ["CAPTURED"] + ["refund_exceeds_credit"] * 3, results
    assert _due(ctx, stay) == Decimal("0.00")


@pytest.mark.postgres
def test_control_without_locks_concurrent_refunds_give_back_the_credit_twice(ctx, pg_db):
    stay = _pg_stay(ctx)
    # every refund waits, after its credit check, until the other saw the credit too
    barrier = threading.Barrier(2, timeout=120)
    with wiring.installed(locking_enabled=False):
        results = _race(ctx, stay, threads=2, pause=lambda: barrier.wait(30))
    assert results == ["CAPTURED", "CAPTURED"], results
    assert _due(ctx, stay) == Decimal("50.00")  # 100.00 given back from a 50.00 credit


def _pg_stay(ctx):
    hotel = make_booking_hotel(ctx, rooms=1, amount="100.00")
    row = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = folios.guest_folio(row)
    stay = {"hotel": hotel, "res": row, "folio": folio.id}
    _pay(ctx, stay, "150.00", method="CASH")
    return stay
