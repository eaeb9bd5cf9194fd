"""The folio of an in-house stay answers plainly what the guest owes: `balance_due`
is posted and projected charges less payments; the other balance is `posted_balance` (posted
charges less payments), so no field named `balance` shows 0.00 beside 180.00 owed."""

from __future__ import annotations

from decimal import Decimal

from pms.api.openapi import build_document
from pms.routes import all_routes
from tests.factories import make_booking_hotel, make_checked_in


def test_an_in_house_folio_shows_what_the_guest_owes_now(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1, amount="90.00")
    res = make_checked_in(ctx, hotel)
    url = f"/v1/properties/{hotel.id}/reservations/{res.id}/folio"
    folio = api.get(url).json
    assert "balance" not in folio
    assert Decimal(folio["posted_balance"]) == 0  # nothing posted before check-out
    assert Decimal(folio["projected_total"]) > 0
    assert Decimal(folio["balance_due"]) == (Decimal(folio["charges_total"])
                                             - Decimal(folio["payments_total"])
                                             + Decimal(folio["projected_total"]))
    paid = api.post(f"/v1/properties/{hotel.id}/folios/{folio['id']}/payments",
                    {"amount": "50.00", "method": "CASH"})
    assert paid.status_code == 201, paid.text
    after = api.get(url).json
    assert Decimal(after["balance_due"]) == Decimal(folio["balance_due"]) - 50
    assert Decimal(after["posted_balance"]) == -50


def test_the_document_says_which_balance_is_owed():
    folio = build_document(all_routes())["components"]["schemas"]["FolioOut"]["properties"]
    assert "What the guest owes now" in folio["balance_due"]["description"]
    assert "balance_due" in folio["posted_balance"]["description"]
    assert "balance" not in folio
