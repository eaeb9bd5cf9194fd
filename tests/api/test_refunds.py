"""Refunds over HTTP on both backends: an overpaid stay, refused at check-out with 409
folio_credit_balance naming the refund route, gets its credit back through
`POST /folios/{id}/refunds` (card through the embedded payments sandbox, or cash) and then checks
out; the refund never exceeds the credit (409 refund_exceeds_credit); money is a decimal string at
the currency's scale (422 otherwise); an Idempotency-Key replays instead of refunding twice; the
OpenAPI document lists the route with the answers it gives.
"""

from __future__ import annotations

import uuid

import pytest

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import Folio, FolioPayment
from tests.api.test_openapi_conformance import DOC, assert_documented
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem, counts

TEMPLATE = "/v1/properties/{property_id}/folios/{id}/refunds"


@pytest.fixture
def stay(ctx, database):
    """A checked-in two-night stay at 100.00 a night: a check-out today posts one night."""
    hotel = make_booking_hotel(ctx, rooms=2, amount="100.00")
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    base = f"/v1/properties/{hotel.id}"
    return {"hotel": hotel, "res": res, "base": base, "f": f"{base}/folios/{folio.id}",
            "check_out": f"{base}/reservations/{res.id}/check-out"}


def _overpay_by_card(api, stay, amount="150.00"):
    resp = api.post(f"{stay['f']}/payments", {"amount": amount, "method": "CARD",
                                              "payment_method_id": "pm_card_visa"})
    assert resp.status_code == 201, resp.text
    return resp.json["payment"]


def test_refund_route_gives_the_credit_back_to_the_card_and_check_out_succeeds(api, stay):
    # Given an overpaid stay that check-out refuses, naming the refund route
    payment = _overpay_by_card(api, stay)
    refused = assert_problem(api.post(stay["check_out"]), 409, "folio_credit_balance")
    assert refused["refund_path"] == stay["f"] + "/refunds"
    assert stay["f"] + "/refunds" in refused["detail"]
    # When the desk refunds the credit to the card
    resp = api.post(stay["f"] + "/refunds", {"amount": "50.00", "payment_id": payment["id"],
                                             "reason": "overpaid at arrival"})
    # Then 201 with the refund and the folio after it
    assert resp.status_code == 201, resp.text
    assert_documented("POST", TEMPLATE, resp)
    refund = resp.json["refund"]
    assert refund["amount"] == "50.00" and refund["status"] == "CAPTURED"
    assert refund["method"] == "CARD" and refund["refund_of"] == payment["id"]
    folio = resp.json["folio"]
    assert folio["balance_due"] == "0.00" and folio["payments_total"] == "100.00"
    listed = next(p for p in folio["payments"] if p["id"] == refund["id"])
    assert listed["kind"] == "REFUND" and listed["amount"] == "-50.00"
    # And check-out succeeds
    out = api.post(stay["check_out"])
    assert out.status_code == 200, out.text
    assert out.json["status"] == "CHECKED_OUT"


def test_cash_refund_is_201_and_writes_one_outbox_and_one_audit_row(api, ctx, stay):
    assert api.post(f"{stay['f']}/payments", {"amount": "120.00", "method": "CASH"}
                    ).status_code == 201
    before = counts(ctx)
    resp = api.post(stay["f"] + "/refunds", {"amount": "20.00", "method": "CASH"})
    assert resp.status_code == 201, resp.text
    assert resp.json["refund"]["refund_of"] is None
    assert counts(ctx) == (before[0] + 1, before[1] + 1)
    assert api.post(stay["check_out"]).status_code == 200


def test_refund_exceeding_the_credit_is_409_refund_exceeds_credit(api, ctx, stay):
    payment = _overpay_by_card(api, stay)
    problem = assert_problem(api.post(stay["f"] + "/refunds", {
        "amount": "50.01", "payment_id": payment["id"]}), 409, "refund_exceeds_credit")
    assert problem["credit"] == "50.00" and problem["currency"] == "EUR"
    assert_documented("POST", TEMPLATE, api.post(stay["f"] + "/refunds", {
        "amount": "60", "method": "CASH"}))
    with read_scope(ctx):
        assert FolioPayment.select().where(FolioPayment.kind == "REFUND").count() == 0


@pytest.mark.parametrize("amount", ["0.004", 1.5, "-5.00", "0", "1_000", " 1.00", "Infinity"])
def test_refund_amount_must_be_a_decimal_string_at_the_currency_scale(api, stay, amount):
    _overpay_by_card(api, stay)
    resp = api.post(stay["f"] + "/refunds", {"amount": amount, "method": "CASH"})
    assert_problem(resp, 422)
    assert_documented("POST", TEMPLATE, resp)


def test_refund_body_rules_are_422(api, stay):
    payment = _overpay_by_card(api, stay)
    card_without_payment = assert_problem(api.post(stay["f"] + "/refunds", {"amount": "5.00"}),
                                          422)
    assert card_without_payment["errors"][0]["field"] == "payment_id"
    assert_problem(api.post(stay["f"] + "/refunds", {
        "amount": "5.00", "method": "CASH", "payment_id": payment["id"]}), 422)
    assert_problem(api.post(stay["f"] + "/refunds", {
        "amount": "5.00", "payment_id": "00000000-0000-4000-8000-000000000000"}), 422)
    assert_problem(api.post(stay["f"] + "/refunds", {
        "amount": "5.00", "method": "CASH", "env_id": "x"}), 422)


def test_refund_of_an_unknown_folio_is_404(api, stay):
    resp = api.post(f"{stay['base']}/folios/00000000-0000-4000-8000-000000000000/refunds",
                    {"amount": "5.00", "method": "CASH"})
    assert_problem(resp, 404, "not_found")
    assert_documented("POST", TEMPLATE, resp)


def test_refund_with_an_idempotency_key_replays_and_refunds_once(api, ctx, stay):
    payment = _overpay_by_card(api, stay)
    body = {"amount": "30.00", "payment_id": payment["id"]}
    headers = {"Idempotency-Key": "refund-once"}
    first = api.post(stay["f"] + "/refunds", body, headers=headers)
    again = api.post(stay["f"] + "/refunds", body, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json["refund"]["id"] == first.json["refund"]["id"]
    with read_scope(ctx):
        assert FolioPayment.select().where(FolioPayment.kind == "REFUND").count() == 1
    assert_problem(api.post(stay["f"] + "/refunds", {**body, "amount": "20.00"},
                            headers=headers), 422, "idempotency_key_mismatch")


def test_refund_is_staff_only(api, settings, stay):
    _overpay_by_card(api, stay)
    guest = mint_token(settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(uuid.uuid4()),
                       scopes=["hotel:pms:folios:write", "hotel:pms:folios:read"])
    assert_problem(api.post(stay["f"] + "/refunds", {"amount": "5.00", "method": "CASH"},
                            token=guest), 403, "guest_not_allowed")
    reader = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:folios:read"])
    assert_problem(api.post(stay["f"] + "/refunds", {"amount": "5.00", "method": "CASH"},
                            token=reader), 403)


def test_openapi_documents_the_refund_route_with_its_answers():
    op = DOC["paths"][TEMPLATE]["post"]
    assert {"201", "202", "404", "409", "422"} <= set(op["responses"])
    assert op["security"] and "hotel:pms:folios:write" in str(op["security"])
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert "RefundIn" in str(body)
    schema = DOC["components"]["schemas"]["RefundIn"]
    assert set(schema["properties"]) == {"amount", "method", "payment_id", "reason"}
    assert schema["properties"]["amount"].get("pattern") or "$ref" in str(
        schema["properties"]["amount"])


def test_the_invoice_of_a_refunded_stay_lists_the_refund(api, stay):
    payment = _overpay_by_card(api, stay)
    assert api.post(stay["f"] + "/refunds", {"amount": "50.00", "payment_id": payment["id"]}
                    ).status_code == 201
    assert api.post(stay["check_out"]).status_code == 200
    invoice = api.post(stay["f"] + "/invoice")
    assert invoice.status_code == 201, invoice.text
    paid = [(p["kind"], p["amount"]) for p in invoice.json["payments"]]
    assert paid == [("PAYMENT", "150.00"), ("REFUND", "-50.00")]
    assert invoice.json["balance"] == "0.00"
    pdf = api.get(f"{stay['f']}/invoice", params={"format": "pdf"})
    assert b"Refund CARD" in pdf.content and b"-50.00" in pdf.content
