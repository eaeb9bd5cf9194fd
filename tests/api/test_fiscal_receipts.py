"""Receipts, deposit invoices and payments in the fiscal journal, through the HTTP API on SQLite
and PostgreSQL: a captured payment gets its receipt (a payment taken before the arrival date its
deposit invoice), each kind numbered in its own gapless series, frozen, listed with the folio's
documents with its fiscal state; every payment and refund is chained into the property's
journal in its transaction, and an edit of a payment or of its entry behind the service's back
fails the verification."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.models import Folio, FolioPayment
from pms.models.cashiering import FiscalJournalEntry
from tests.factories import make_booking_hotel, make_checked_in, make_reservation
from tests.helpers import assert_problem


@pytest.fixture
def hotel(ctx, database):
    return make_booking_hotel(ctx, rooms=2)


def _in_house(ctx, hotel):
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    return f"/v1/properties/{hotel.id}/folios/{folio.id}"


def _pay(api, folio, amount="50.00", method="CASH"):
    resp = api.post(f"{folio}/payments", {"amount": amount, "method": method})
    assert resp.status_code == 201, resp.text
    return resp.json["payment"]["id"]


def _verification(api, hotel):
    resp = api.get(f"/v1/properties/{hotel.id}/fiscal-journal/verification")
    assert resp.status_code == 200, resp.text
    return resp.json


def test_a_captured_payment_gets_one_receipt_in_its_own_series(api, ctx, hotel):
    folio = _in_house(ctx, hotel)
    first_payment = _pay(api, folio, "50.00")
    first = api.post(f"{folio}/payments/{first_payment}/receipt")
    assert first.status_code == 201, first.text
    receipt = first.json
    assert receipt["kind"] == "RECEIPT" and receipt["number"].endswith("-R-000001")
    assert receipt["payment"]["amount"] == "50.00" and receipt["payment"]["method"] == "CASH"
    assert receipt["charges_total"] == "50.00" and receipt["folio_id"] in folio
    again = api.post(f"{folio}/payments/{first_payment}/receipt")
    assert again.status_code == 200 and again.json == receipt  # issued once
    second_payment = _pay(api, folio, "20.00")
    second = api.post(f"{folio}/payments/{second_payment}/receipt").json
    assert second["number"].endswith("-R-000002")

    listed = api.get(f"{folio}/documents").json["data"]
    assert [(d["kind"], d["refers_to_id"], d["fiscal_state"]) for d in listed] == [
        ("RECEIPT", first_payment, "PENDING"), ("RECEIPT", second_payment, "PENDING")]
    base = f"/v1/properties/{hotel.id}"
    assert api.get(f"{base}/fiscal-documents/{receipt['id']}").json == receipt
    pdf = api.get(f"{base}/fiscal-documents/{receipt['id']}", params={"format": "pdf"})
    assert pdf.status_code == 200 and b"RECEIPT" in pdf.content
    state = api.get(f"{base}/fiscal-documents/{receipt['id']}/fiscalization")
    assert state.status_code == 200 and state.json["state"] == "PENDING"
    check = _verification(api, hotel)
    assert check["ok"] and check["documents"] == 2 and check["payments"] == 2, check


def test_a_payment_before_the_arrival_date_gets_a_deposit_invoice(api, ctx, hotel):
    res = make_reservation(ctx, hotel,
                           arrival_date=(hotel.today + timedelta(days=10)).isoformat(),
                           departure_date=(hotel.today + timedelta(days=12)).isoformat())
    base = f"/v1/properties/{hotel.id}"
    opened = api.post(f"{base}/reservations/{res.id}/folios", {"folio_type": "EXTRA"})
    assert opened.status_code == 201, opened.text
    folio = f"{base}/folios/{opened.json['id']}"
    deposit = api.post(f"{folio}/payments/{_pay(api, folio, '100.00')}/receipt")
    assert deposit.status_code == 201, deposit.text
    assert deposit.json["kind"] == "DEPOSIT_INVOICE"
    assert deposit.json["number"].endswith("-D-000001")  # its own series
    assert deposit.json["arrival_date"] == res.arrival_date.isoformat()
    # a payment during the stay is a receipt, numbered in the receipts' series
    in_house = _in_house(ctx, hotel)
    receipt = api.post(f"{in_house}/payments/{_pay(api, in_house)}/receipt").json
    assert receipt["kind"] == "RECEIPT" and receipt["number"].endswith("-R-000001")


def test_a_refund_or_an_unknown_payment_gets_no_receipt(api, ctx, hotel):
    folio = _in_house(ctx, hotel)
    _pay(api, folio, "500.00")
    refund = api.post(f"{folio}/refunds", {"amount": "5.00", "method": "CASH"})
    assert refund.status_code in (200, 201), refund.text
    with read_scope(ctx):
        refund_id = FolioPayment.get(FolioPayment.kind == "REFUND").id
    assert_problem(api.post(f"{folio}/payments/{refund_id}/receipt"), 409,
                   "payment_not_receiptable")
    assert_problem(api.post(f"{folio}/payments/{uuid.uuid4()}/receipt"), 404)
    assert api.get(f"{folio}/documents").json["data"] == []


def test_every_payment_and_refund_is_chained_and_an_edit_behind_the_services_back_fails(
        api, ctx, hotel, database):
    folio = _in_house(ctx, hotel)
    payment_id = _pay(api, folio, "800.00")
    assert api.post(f"{folio}/refunds", {"amount": "30.00", "method": "CASH"}
                    ).status_code in (200, 201)
    check = _verification(api, hotel)
    assert check["ok"] and check["payments"] == 2 and check["entries"] == 2, check  # control
    with read_scope(ctx):
        kinds = [e.kind for e in FiscalJournalEntry.select().order_by(FiscalJournalEntry.seq)]
    assert kinds == ["PAYMENT", "REFUND"]

    # the payment's entry edited outside the service (its record's hash replaced)
    with tenant_scope(ctx.env_id), database.atomic():
        entry = FiscalJournalEntry.get(FiscalJournalEntry.document_id == uuid.UUID(payment_id))
        original = entry.content_hash
        changed = FiscalJournalEntry.update(content_hash="0" * 64).where(
            FiscalJournalEntry.id == entry.id).execute()
    assert changed == 1
    check = _verification(api, hotel)
    assert not check["ok"] and "entry 1" in check["problems"][0], check
    with tenant_scope(ctx.env_id), database.atomic():
        FiscalJournalEntry.update(content_hash=original).where(
            FiscalJournalEntry.id == entry.id).execute()
    assert _verification(api, hotel)["ok"]  # put back: verifies again

    # the payment itself edited outside the service (its amount)
    with tenant_scope(ctx.env_id), database.atomic():
        FolioPayment.update(amount="80.00").where(
            FolioPayment.id == uuid.UUID(payment_id)).execute()
    check = _verification(api, hotel)
    assert not check["ok"] and "differs from what was chained" in check["problems"][0], check
