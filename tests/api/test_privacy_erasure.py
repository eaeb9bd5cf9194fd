"""Erasure as anonymization: refused while a stay is open or a balance is due (a dry run lists
the same), then the person's name, e-mail and phone are in no stored row but the issued invoice
(held, untouched, listed with until when and why); one profile:erased event without personal
data; the old e-mail no longer finds the profile."""

from __future__ import annotations

import json

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import Folio, Invoice, OutboxEvent, Profile
from tests.factories import make_booking_hotel, make_checked_in, make_profile
from tests.helpers import assert_problem, rows_holding


def _stay(api, ctx):  # noqa: ANN001, ANN202
    hotel = make_booking_hotel(ctx, rooms=2)
    ada = make_profile(ctx, hotel.id, first_name="Adalind", last_name="Quokkaforth",
                       phone="+447700900123")
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(ada.id), guest=None)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == stay.id)
    base = f"/v1/properties/{hotel.id}"
    api.post(f"{base}/feedback", {"reservation_id": str(stay.id), "rating": 4,
                                  "comment": "Adalind Quokkaforth loved it"})
    return hotel, ada, stay, folio, base


def test_erasure_waits_for_the_stay_then_anonymizes_everything_but_the_held_invoice(api, ctx):
    hotel, ada, stay, folio, base = _stay(api, ctx)
    url = f"{base}/profiles/{ada.id}/erasure"
    dry = api.post(url, {"dry_run": True})
    assert dry.status_code == 200, dry.text
    assert {b["kind"] for b in dry.json["blockers"]} >= {"reservation"}
    assert dry.json["erased"] is False
    refused = assert_problem(api.post(url, {}), 409, "erasure_refused")
    assert str(stay.id) in json.dumps(refused["blockers"])
    with read_scope(ctx):
        assert Profile.get_by_id(ada.id).email == ada.email  # nothing changed

    balance = assert_problem(api.post(f"{base}/reservations/{stay.id}/check-out"), 409,
                             "folio_not_closable")["balance"]
    api.post(f"{base}/folios/{folio.id}/payments", {"amount": balance, "method": "CASH"})
    assert api.post(f"{base}/reservations/{stay.id}/check-out").status_code == 200
    assert api.post(f"{base}/folios/{folio.id}/invoice").status_code == 201
    with read_scope(ctx):
        invoice = Invoice.get(Invoice.folio_id == folio.id)
    document_before = json.dumps(invoice.document, sort_keys=True)

    dry = api.post(url, {"dry_run": True}).json
    assert dry["blockers"] == []
    assert [h["id"] for h in dry["held"]] == [str(invoice.id)]
    assert dry["held"][0]["until"] > invoice.issued_at.isoformat()[:4]
    assert rows_holding(ctx, [ada.email]), "the control: the scan sees the e-mail before"

    done = api.post(url, {})
    assert done.status_code == 200, done.text
    assert done.json["erased"] is True and done.json["pseudonym"].startswith("erased-")
    leftovers = rows_holding(ctx, [ada.email, "Quokkaforth", "Adalind", "+447700900123"])
    assert leftovers == {}, leftovers
    with read_scope(ctx):
        kept = Invoice.get_by_id(invoice.id)
        assert json.dumps(kept.document, sort_keys=True) == document_before
        erased = [e for e in OutboxEvent.select() if e.type == "hotel:pms:profile:erased"]
    assert len(erased) == 1 and ada.email not in json.dumps(erased[0].data)
    # the old e-mail finds no profile: the same body makes a new one
    again = api.post(f"{base}/profiles", {"first_name": "Adalind", "last_name": "Quokkaforth",
                                          "email": ada.email})
    assert again.status_code == 201, again.text
    assert again.json["id"] != str(ada.id)


def test_a_guest_erases_only_itself_and_a_bad_body_is_422(api, ctx):
    hotel, ada, stay, folio, base = _stay(api, ctx)
    other = make_profile(ctx, hotel.id)
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(ada.id))
    own = api.post(f"{base}/profiles/{ada.id}/erasure", {"dry_run": True}, token=token)
    assert own.status_code == 200, own.text
    assert_problem(api.post(f"{base}/profiles/{other.id}/erasure", {"dry_run": True},
                            token=token), 404)
    assert_problem(api.post(f"{base}/profiles/{ada.id}/erasure", {"dry_run": "maybe"}), 422)
    # a profile with no stay is erased at once
    assert api.post(f"{base}/profiles/{other.id}/erasure", {}).json["erased"] is True
