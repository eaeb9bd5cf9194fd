"""A fiscal document's language, on SQLite and PostgreSQL: chosen at issue (the guest profile's
language, else the property's first `languages` entry, else English), frozen with the document
(its JSON's `language` and the invoice row's column), and the printable PDF's words follow it
(German and English; any other language prints in English); a reprint after the profile changed
answers the same bytes."""

from __future__ import annotations

import uuid

from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.models import Folio, Profile, Property, Reservation
from pms.models.cashiering import Invoice
from pms.services.cashiering import invoices
from tests.api.test_cashiering import add_code
from tests.api.test_fiscal_documents import _settle_and_check_out
from tests.factories import make_booking_hotel, make_checked_in


def _stay(ctx, database, *, guest_language, property_languages):
    hotel = make_booking_hotel(ctx, rooms=1)
    add_code(ctx, hotel.id, "FB", "F&B")
    res = make_checked_in(ctx, hotel)
    with tenant_scope(ctx.env_id), database.atomic():  # the setting under test
        Property.update(languages=property_languages).where(Property.id == hotel.id).execute()
        row = Reservation.get_by_id(res.id)
        profile_id = row.guest_profile_id
        if profile_id is None:
            profile_id = uuid.uuid4()
            Profile.create(id=profile_id, first_name="Ada", last_name="Guest")
            Reservation.update(guest_profile=profile_id).where(
                Reservation.id == res.id).execute()
        Profile.update(language=guest_language).where(Profile.id == profile_id).execute()
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    base = f"/v1/properties/{hotel.id}"
    return {"base": base, "res": f"{base}/reservations/{res.id}", "f": f"{base}/folios/{folio.id}",
            "profile_id": profile_id}


def _invoice(api, stay):
    assert api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "30.00",
                                             "description": "Dinner"}).status_code == 201
    _settle_and_check_out(api, stay)
    created = api.post(f"{stay['f']}/invoice")
    assert created.status_code == 201, created.text
    return created.json


def _pdf(api, stay, document_id):
    resp = api.get(f"{stay['base']}/fiscal-documents/{document_id}", params={"format": "pdf"})
    assert resp.status_code == 200, resp.text
    return resp.content


def test_a_german_guests_invoice_is_in_german_and_frozen(api, ctx, database):
    stay = _stay(ctx, database, guest_language="de", property_languages=["en"])
    invoice = _invoice(api, stay)
    assert invoice["language"] == "de"
    with read_scope(ctx):
        assert Invoice.get_by_id(uuid.UUID(invoice["id"])).language == "de"
    pdf = _pdf(api, stay, invoice["id"])
    assert b"RECHNUNG" in pdf and b"Summe" in pdf and b"davon MwSt." in pdf
    assert b"INVOICE" not in pdf and b"Total charges" not in pdf
    # the profile changes afterwards: the document, its JSON and its reprint do not
    with tenant_scope(ctx.env_id), database.atomic():
        Profile.update(language="en").where(Profile.id == stay["profile_id"]).execute()
    assert api.get(f"{stay['base']}/fiscal-documents/{invoice['id']}").json == invoice
    assert _pdf(api, stay, invoice["id"]) == pdf
    # the credit note of a revert is in the language chosen at its own issue (now English)
    assert api.post(f"{stay['res']}/revert", {"reason": "guest extends"}).status_code == 200
    note = api.get(f"{stay['f']}/documents").json["data"][1]
    assert api.get(f"{stay['base']}/fiscal-documents/{note['id']}").json["language"] == "en"
    assert b"CREDIT NOTE" in _pdf(api, stay, note["id"])


def test_a_guest_without_a_language_gets_the_propertys_first(api, ctx, database):
    stay = _stay(ctx, database, guest_language=None, property_languages=["de", "en"])
    invoice = _invoice(api, stay)
    assert invoice["language"] == "de"
    assert b"RECHNUNG" in _pdf(api, stay, invoice["id"])


def test_a_property_without_languages_prints_in_english(api, ctx, database):
    stay = _stay(ctx, database, guest_language="", property_languages=[])
    invoice = _invoice(api, stay)
    assert invoice["language"] == "en"
    pdf = _pdf(api, stay, invoice["id"])
    assert b"INVOICE" in pdf and b"Total charges" in pdf and b"RECHNUNG" not in pdf


def test_labels_by_primary_subtag_and_english_for_any_other_language():
    assert invoices.labels("de-AT")[invoices.INVOICE] == "RECHNUNG"
    assert invoices.labels("fr")[invoices.INVOICE] == "INVOICE"
    assert invoices.labels(None)["total"] == "Total charges"
    old = {"kind": "INVOICE", "number": "P-000001", "issued_at": "2026-01-01T00:00:00+00:00",
           "property": {"name": "H", "code": "P"}, "guest": {}, "arrival_date": "2026-01-01",
           "departure_date": "2026-01-02", "confirmation_number": "C", "currency": "EUR",
           "lines": [], "tax_summary": {"VAT7": "1.00"}, "charges_total": "1.00"}
    # a document issued before languages were recorded prints in English, as it did
    pdf = invoices.invoice_pdf(old)
    assert b"INVOICE P-000001" in pdf and b"  of which tax VAT7" in pdf
    assert b"RECHNUNG" in invoices.invoice_pdf({**old, "language": "de"})
