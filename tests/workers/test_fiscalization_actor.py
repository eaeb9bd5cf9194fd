"""Fiscal documents reach their provider through the outbox: an invoice issued through the API
is PENDING; the relay's subscriber sends `fiscalize_document`, which the (embedded sandbox)
signer answers with its signature, counter and time. The signer's outage delays fiscalization
without failing the check-out or the invoice; the retry fiscalizes once, and a replay of every
event signs nothing again."""

from __future__ import annotations

import time
import uuid

import pytest

from pms.db.uow import read_scope
from pms.models import Folio
from pms.models.fiscalization import Fiscalization
from pms.platform.fiscal import FiscalOutcome
from pms.services.cashiering.fiscal_journal import content_hash
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem
from tests.workers.test_actors import _worker, pump, replay_all, worker  # noqa: F401
from workers import actors

QUEUE = actors.fiscalize_document.queue_name


@pytest.fixture
def signer():
    sandbox = actors._platform().fiscal
    sandbox.fault = None
    yield sandbox
    sandbox.fault = None


def _invoiced_stay(api, ctx):
    hotel = make_booking_hotel(ctx)
    stay = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == stay.id)
    base = f"/v1/properties/{hotel.id}"
    checkout = api.post(f"{base}/reservations/{stay.id}/check-out")
    if checkout.status_code == 409:
        balance = assert_problem(checkout, 409, "folio_not_closable")["balance"]
        paid = api.post(f"{base}/folios/{folio.id}/payments", {"amount": balance,
                                                               "method": "CASH"})
        assert paid.status_code == 201, paid.text
        checkout = api.post(f"{base}/reservations/{stay.id}/check-out")
    assert checkout.status_code == 200, checkout.text
    invoice = api.post(f"{base}/folios/{folio.id}/invoice")
    assert invoice.status_code == 201, invoice.text
    return base, folio.id, invoice.json


def _row(ctx, document_id):
    with read_scope(ctx):
        return Fiscalization.get_by_id(uuid.UUID(document_id))


def _wait_for(predicate, what, timeout_s=60.0):
    """Wait for a condition the worker's threads make true (not a guess at a duration)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def test_an_issued_invoice_is_signed_once_through_the_outbox(api, ctx, worker, signer):  # noqa: F811
    base, folio_id, invoice = _invoiced_stay(api, ctx)
    state = api.get(f"{base}/fiscal-documents/{invoice['id']}/fiscalization")
    assert state.status_code == 200 and state.json["state"] == "PENDING"  # nothing called yet

    pump(ctx, worker)
    worker.join(QUEUE, fail_fast=True)

    done = api.get(f"{base}/fiscal-documents/{invoice['id']}/fiscalization").json
    assert done["state"] == "ACCEPTED" and done["provider"] == "sandbox"
    assert done["signature_counter"] == 1 and done["signature"] and done["signed_at"]
    listed = api.get(f"{base}/folios/{folio_id}/documents").json["data"]
    assert [d["fiscal_state"] for d in listed] == ["ACCEPTED"]
    # the document itself is what was issued, and the signature is over its content
    assert api.get(f"{base}/fiscal-documents/{invoice['id']}").json == invoice
    from datetime import datetime

    assert signer.verify(FiscalOutcome(status="ACCEPTED", provider="sandbox",
                                       signature=done["signature"],
                                       signature_counter=done["signature_counter"],
                                       signed_at=datetime.fromisoformat(done["signed_at"])),
                         kind="INVOICE", number=invoice["number"],
                         content_hash=content_hash(invoice))

    calls = list(signer.calls)
    replay_all(ctx)
    pump(ctx, worker)
    worker.join(QUEUE, fail_fast=True)
    assert signer.calls == calls
    assert _row(ctx, invoice["id"]).attempts == 1


def test_the_signers_outage_delays_fiscalization_and_the_retry_signs_once(
        api, ctx, worker, signer):  # noqa: F811
    # Given the fiscal signer is down
    signer.fault = "unavailable"
    before = len(signer.calls)
    # When the guest checks out and the invoice is issued
    base, _folio_id, invoice = _invoiced_stay(api, ctx)  # neither is refused
    pump(ctx, worker)
    # Then the first submission fails and leaves the document PENDING, its error kept
    _wait_for(lambda: _row(ctx, invoice["id"]).attempts >= 1
              and _row(ctx, invoice["id"]).state == "PENDING", "the failed first attempt")
    row = _row(ctx, invoice["id"])
    assert row.signature is None and "unavailable" in (row.last_error or "")
    assert signer.calls[before:] == []
    # When the signer is back, the actor's retry signs it, once
    signer.fault = None
    worker.join(QUEUE, fail_fast=True)
    row = _row(ctx, invoice["id"])
    assert row.state == "ACCEPTED" and row.attempts >= 2 and row.signature_counter == 1
    assert signer.calls[before:] == [invoice["id"]]
    assert api.get(f"{base}/fiscal-documents/{invoice['id']}").json == invoice
