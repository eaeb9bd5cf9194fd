"""Documents an auditor accepts, through the HTTP API on SQLite and PostgreSQL: a stay's life
with a correction (invoice, a reverted check-out that issues its credit note in the same
transaction, the folio corrected and closed again, the next invoice), every document frozen and
numbered in its own gapless series, and the property's fiscal journal, a hash chain that verifies
through the API and the CLI and fails when a document, an entry or the end of the chain is
changed behind the service's back."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.models import Folio
from pms.models.cashiering import Invoice
from pms.services.cashiering import fiscal_journal
from tests.api.test_cashiering import add_code
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem


@pytest.fixture
def stay(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=2)
    add_code(ctx, hotel.id, "FB", "F&B")
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    base = f"/v1/properties/{hotel.id}"
    return {"hotel": hotel, "res": f"{base}/reservations/{res.id}", "base": base,
            "f": f"{base}/folios/{folio.id}"}


def _settle_and_check_out(api, stay):
    checkout = api.post(f"{stay['res']}/check-out")
    if checkout.status_code == 409:
        balance = assert_problem(checkout, 409, "folio_not_closable")["balance"]
        assert api.post(f"{stay['f']}/payments", {"amount": balance, "method": "CASH"}
                        ).status_code == 201
        checkout = api.post(f"{stay['res']}/check-out")
    assert checkout.status_code == 200, checkout.text


def _verification(api, stay):
    resp = api.get(f"{stay['base']}/fiscal-journal/verification")
    assert resp.status_code == 200, resp.text
    return resp.json


def test_a_stay_corrected_after_its_invoice_gets_a_credit_note_and_a_new_invoice(api, stay):
    api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "30.00",
                                      "description": "Dinner"})
    _settle_and_check_out(api, stay)
    first = api.post(f"{stay['f']}/invoice")
    assert first.status_code == 201, first.text
    invoice = first.json
    assert invoice["kind"] == "INVOICE" and invoice["number"].endswith("-000001")

    # the guest stays another night after all: the revert cancels the invoice in its transaction
    revert = api.post(f"{stay['res']}/revert", {"reason": "guest extends"})
    assert revert.status_code == 200, revert.text
    documents = api.get(f"{stay['f']}/documents").json["data"]
    assert [d["kind"] for d in documents] == ["INVOICE", "CREDIT_NOTE"]
    note = documents[1]
    assert note["refers_to_id"] == invoice["id"] and note["reason"] == "guest extends"
    assert "-CN-" in note["number"] and note["number"].endswith("-000001")  # its own series
    assert Decimal(note["charges_total"]) == -Decimal(invoice["charges_total"])
    whole = api.get(f"{stay['base']}/fiscal-documents/{note['id']}").json
    assert whole["refers_to"]["number"] == invoice["number"]
    assert sum(Decimal(line["amount"]) for line in whole["lines"]) == -sum(
        Decimal(line["amount"]) for line in invoice["lines"])
    # the cancelled invoice is unchanged, and no longer the folio's invoice in force
    assert api.get(f"{stay['base']}/fiscal-documents/{invoice['id']}").json == invoice
    gone = assert_problem(api.get(f"{stay['f']}/invoice"), 404)
    assert note["number"] in gone["detail"]
    assert_problem(api.post(f"{stay['f']}/invoice"), 409, "folio_not_closed")

    # the folio is corrected (an allowance) and closed again: the next invoice follows the note
    assert api.post(f"{stay['f']}/allowances", {"transaction_code": "FB", "amount": "5",
                                                "reason": "cold soup"}).status_code == 201
    refund = api.post(f"{stay['f']}/refunds", {"amount": "5.00", "method": "CASH"})
    assert refund.status_code in (200, 201), refund.text
    _settle_and_check_out(api, stay)
    second = api.post(f"{stay['f']}/invoice")
    assert second.status_code == 201, second.text
    assert second.json["number"].endswith("-000002")
    assert second.json["follows_credit_note"] == note["number"]
    assert api.get(f"{stay['f']}/invoice").json["number"] == second.json["number"]
    assert [d["kind"] for d in api.get(f"{stay['f']}/documents").json["data"]] == [
        "INVOICE", "CREDIT_NOTE", "INVOICE"]
    pdf = api.get(f"{stay['base']}/fiscal-documents/{note['id']}", params={"format": "pdf"})
    assert pdf.status_code == 200 and b"CREDIT NOTE" in pdf.content

    check = _verification(api, stay)
    # three documents, and the check-out's payment and the refund
    assert check["ok"] and check["documents"] == 3 and check["payments"] == 2, check
    assert check["entries"] == check["documents"] + check["payments"]


def test_a_revert_of_a_check_out_never_invoiced_issues_no_credit_note(api, stay):
    _settle_and_check_out(api, stay)
    assert api.post(f"{stay['res']}/revert", {"reason": "wrong guest"}).status_code == 200
    assert api.get(f"{stay['f']}/documents").json["data"] == []
    check = _verification(api, stay)
    assert check["documents"] == 0 and check["entries"] == check["payments"] == 1  # the payment


def test_an_edit_behind_the_services_back_fails_the_verification(api, stay, ctx, database):
    _settle_and_check_out(api, stay)
    invoice = api.post(f"{stay['f']}/invoice").json
    assert _verification(api, stay)["ok"]
    tampered = dict(invoice, charges_total="1.00")
    with tenant_scope(ctx.env_id), database.atomic():  # an UPDATE made outside the service
        changed = Invoice.update(document=tampered).where(
            Invoice.id == uuid.UUID(invoice["id"])).execute()
    assert changed == 1
    check = _verification(api, stay)
    assert not check["ok"] and "differs from what was chained" in check["problems"][0], check


def test_the_chain_detects_an_edited_entry_a_gap_and_a_missing_document():
    documents = {f"d{i}": {"number": f"P-{i:06d}", "total": str(i)} for i in range(1, 4)}
    entries, prev = [], fiscal_journal.GENESIS
    for seq, (doc_id, doc) in enumerate(documents.items(), start=1):
        content = fiscal_journal.content_hash(doc)
        link = fiscal_journal.link_hash(prev, seq, "INVOICE", doc["number"], doc_id, content)
        entries.append({"seq": seq, "kind": "INVOICE", "document_id": doc_id,
                        "number": doc["number"], "content_hash": content, "prev_hash": prev,
                        "hash": link})
        prev = link
    head = {"last_seq": 3, "last_hash": prev}
    assert fiscal_journal.verify_chain(entries, documents, head=head).ok  # the control
    edited = [dict(e) for e in entries]
    edited[1]["number"] = "P-999999"
    assert not fiscal_journal.verify_chain(edited, documents, head=head).ok
    assert not fiscal_journal.verify_chain([entries[0], entries[2]], documents, head=head).ok
    assert not fiscal_journal.verify_chain(entries[:2], documents, head=head).ok  # end cut
    assert not fiscal_journal.verify_chain(entries, {**documents, "d4": {"number": "x"}},
                                           head=head).ok



def test_cancelling_an_invoice_needs_a_reason_that_is_not_blank(api, stay):
    _settle_and_check_out(api, stay)
    invoice = api.post(f"{stay['f']}/invoice").json
    refused = api.post(f"{stay['res']}/revert", {"reason": "   "})
    assert_problem(refused, 422, "validation_failed")
    assert invoice["number"] in refused.json["detail"]
    assert api.get(f"{stay['f']}/invoice").json == invoice  # still in force: nothing reverted
    assert [d["kind"] for d in api.get(f"{stay['f']}/documents").json["data"]] == ["INVOICE"]
    done = api.post(f"{stay['res']}/revert", {"reason": " wrong room rate "})
    assert done.status_code == 200, done.text
    note = api.get(f"{stay['f']}/documents").json["data"][1]
    assert note["kind"] == "CREDIT_NOTE" and note["reason"] == "wrong room rate"
