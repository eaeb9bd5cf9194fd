"""Cashiering over HTTP on both backends: charges with tax lines, corrections, moves, allowances,
payments (card via the sandbox, cash, voucher), pre-authorizations, invoices, split billing, and
the check-out rules (409 folio_not_closable with the balance; a closed folio takes no posting)."""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest

from pms.db.uow import read_scope
from pms.models import Folio, FolioCharge, FolioPayment
from pms.schemas.cashiering import TransactionCodeIn
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import EOD_OVERRIDE, assert_problem, counts


def add_code(ctx, property_id, code, category, rate="7", inclusive=True, account="fnb_revenue"):
    body = {"code": code, "name": code.title(), "category": category, "ledger_account": account,
            "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": rate,
                           "inclusive": inclusive, "name": "VAT"}] if rate else []}
    return catalog.create_child(ctx, TRANSACTION_CODE, property_id,
                                msgspec.convert(body, TransactionCodeIn))


@pytest.fixture
def stay(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=2)
    add_code(ctx, hotel.id, "FB", "F&B")
    add_code(ctx, hotel.id, "MINI", "mini bar", rate="19", inclusive=False)
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    base = f"/v1/properties/{hotel.id}"
    return {"hotel": hotel, "res": res, "folio": folio.id, "base": base,
            "f": f"{base}/folios/{folio.id}"}


def lines_sum(folio_json):
    return sum(Decimal(c["amount"]) for c in folio_json["charges"])


def test_charge_posts_net_and_tax_lines_and_totals_equal_lines(api, ctx, stay):
    before = counts(ctx)
    resp = api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "20.00",
                                             "description": "Dinner"})
    assert resp.status_code == 201, resp.text
    folio = resp.json
    kinds = [(c["kind"], c["amount"]) for c in folio["charges"]]
    assert ("charge", "18.69") in kinds and ("tax", "1.31") in kinds
    assert Decimal(folio["charges_total"]) == lines_sum(folio) == Decimal("20.00")
    assert counts(ctx) == (before[0] + 1, before[1] + 1)  # one outbox and one audit row
    excl = api.post(f"{stay['f']}/charges", {"transaction_code": "MINI", "amount": "5",
                                             "quantity": 2}).json
    assert Decimal(excl["charges_total"]) == Decimal("31.90") == lines_sum(excl)


def test_bad_charges_are_422(api, stay):
    assert_problem(api.post(f"{stay['f']}/charges", {"transaction_code": "NOPE", "amount": "1"}), 422)
    assert_problem(api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "-1"}), 422)
    assert_problem(api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "0"}), 422)
    assert_problem(api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "x"}), 422)
    assert_problem(api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "1",
                                                     "env_id": "x"}), 422)


def test_correction_is_a_reversal_never_an_edit(api, stay):
    folio = api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "20.00"}).json
    charge = next(c for c in folio["charges"] if c["kind"] == "charge")
    resp = api.post(f"{stay['f']}/charges/{charge['id']}/correction", {"reason": "wrong table"})
    assert resp.status_code == 201, resp.text
    after = resp.json
    assert any(c["id"] == charge["id"] and c["amount"] == "18.69" for c in after["charges"])
    reversals = [c for c in after["charges"] if c["reversal_of"]]
    assert sorted(c["amount"] for c in reversals) == ["-1.31", "-18.69"]
    assert Decimal(after["charges_total"]) == lines_sum(after)
    assert_problem(api.post(f"{stay['f']}/charges/{charge['id']}/correction",
                            {"reason": "again"}), 409, "charge_already_reversed")


def test_split_billing_move_and_checkout_needs_every_folio_settled(api, stay):
    extra = api.post(f"{stay['base']}/reservations/{stay['res'].id}/folios",
                     {"folio_type": "COMPANY"})
    assert extra.status_code == 201, extra.text
    folio = api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "20.00"}).json
    charge = next(c for c in folio["charges"] if c["kind"] == "charge")
    moved = api.post(f"{stay['f']}/charges/{charge['id']}/move",
                     {"target_folio_id": extra.json["id"]})
    assert moved.status_code == 201, moved.text
    target = api.get(f"{stay['base']}/folios/{extra.json['id']}").json
    assert Decimal(target["posted_balance"]) == Decimal("20.00")
    both = api.get(f"{stay['base']}/reservations/{stay['res'].id}/folios").json["data"]
    assert [f["folio_type"] for f in both] == ["GUEST", "COMPANY"]
    # check-out posts the room night to the guest folio first: settle that one
    first = assert_problem(api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out"),
                           409, "folio_not_closable")
    assert first["folio_id"] == str(stay["folio"])
    api.post(f"{stay['f']}/payments", {"amount": first["balance"], "method": "CASH"})
    out = api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out")
    body = assert_problem(out, 409, "folio_not_closable")
    assert body["balance"] == "20.00" and body["folio_id"] == extra.json["id"]
    paid = api.post(f"{stay['base']}/folios/{extra.json['id']}/payments",
                    {"amount": "20.00", "method": "CARD", "payment_method_id": "pm_card_visa"})
    assert paid.status_code == 201, paid.text
    assert api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out").status_code == 200


def test_checkout_with_balance_is_409_with_the_balance_then_closed_folio_refuses_postings(
        api, ctx, stay):
    api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "12.00"})
    out = api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out")
    body = assert_problem(out, 409, "folio_not_closable")
    balance = Decimal(body["balance"])
    assert balance > 0 and body["currency"] == "EUR"
    pay = api.post(f"{stay['f']}/payments", {"amount": str(balance), "method": "CARD",
                                             "payment_method_id": "pm_card_visa"})
    assert pay.status_code == 201 and pay.json["payment"]["status"] == "CAPTURED"
    assert api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out").status_code == 200
    assert_problem(api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "1"}),
                   409, "folio_closed")
    assert_problem(api.post(f"{stay['f']}/payments", {"amount": "1", "method": "CASH"}),
                   409, "folio_closed")
    # every closed folio of the env has a zero balance
    with read_scope(ctx):
        for folio in Folio.select().where(Folio.status == "CLOSED"):
            charged = sum((Decimal(str(c.amount)) for c in folio.charges), Decimal(0))
            paid = sum((Decimal(str(p.amount)) for p in folio.payments if p.status == "CAPTURED"),
                       Decimal(0))
            assert charged == paid


def test_declined_card_payment_is_402_and_captures_nothing(api, ctx, stay):
    api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "10"})
    resp = api.post(f"{stay['f']}/payments", {"amount": "10", "method": "CARD",
                                              "payment_method_id": "pm_card_declined"})
    body = assert_problem(resp, 402, "payment_declined")
    assert body["decline_code"] == "card_declined"
    with read_scope(ctx):
        statuses = [p.status for p in FolioPayment.select()]
    assert statuses == ["FAILED"]
    assert api.get(stay["f"]).json["posted_balance"] != "0.00"


def test_pre_authorization_then_capture_consumes_it(api, stay):
    api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "40"})
    pre = api.post(f"{stay['f']}/pre-authorizations", {"amount": "100",
                                                      "payment_method_id": "pm_card_visa"})
    assert pre.status_code == 201, pre.text
    assert pre.json["payment"]["status"] == "AUTHORIZED" and pre.json["payment"]["kind"] == "PRE_AUTH"
    assert pre.json["folio"]["payments_total"] == "0.00"  # not money until captured
    cap = api.post(f"{stay['f']}/payments", {"amount": "40", "method": "CARD",
                                             "pre_authorization_id": pre.json["payment"]["id"]})
    assert cap.status_code == 201, cap.text
    assert cap.json["payment"]["status"] == "CAPTURED" and cap.json["folio"]["posted_balance"] == "0.00"
    statuses = {p["kind"]: p["status"] for p in cap.json["folio"]["payments"]}
    assert statuses == {"PRE_AUTH": "CONSUMED", "PAYMENT": "CAPTURED"}
    assert_problem(api.post(f"{stay['f']}/payments", {
        "amount": "1", "method": "CARD", "pre_authorization_id": pre.json["payment"]["id"]}), 422)


def test_gift_voucher_redeemed_as_payment(api, stay):
    voucher = api.post(f"{stay['base']}/gift-vouchers", {"amount": "30", "code": "GIFT1"}).json
    api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "25"})
    paid = api.post(f"{stay['f']}/payments", {"amount": "25", "method": "VOUCHER",
                                              "voucher_code": "GIFT1"})
    assert paid.status_code == 201, paid.text
    assert api.get(f"{stay['base']}/gift-vouchers/{voucher['id']}").json["balance"] == "5.00"
    assert_problem(api.post(f"{stay['f']}/payments", {"amount": "6", "method": "VOUCHER",
                                                      "voucher_code": "GIFT1"}),
                   409, "voucher_not_redeemable")
    assert_problem(api.post(f"{stay['f']}/payments", {"amount": "6", "method": "CASH",
                                                      "payment_method_id": "pm_x"}), 422)


def test_allowance_credits_with_taxes(api, stay):
    api.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "20"})
    resp = api.post(f"{stay['f']}/allowances", {"transaction_code": "FB", "amount": "5",
                                                "reason": "cold soup"})
    assert resp.status_code == 201, resp.text
    assert resp.json["charges_total"] == "15.00" and Decimal("15.00") == lines_sum(resp.json)


def test_invoice_numbered_once_per_closed_folio_as_json_and_pdf(api, stay):
    assert_problem(api.post(f"{stay['f']}/invoice"), 409, "folio_not_closed")
    checkout = api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out")
    balance = assert_problem(checkout, 409, "folio_not_closable")["balance"]
    api.post(f"{stay['f']}/payments", {"amount": balance, "method": "CASH"})
    assert api.post(f"{stay['base']}/reservations/{stay['res'].id}/check-out").status_code == 200
    first = api.post(f"{stay['f']}/invoice")
    assert first.status_code == 201, first.text
    number = first.json["number"]
    assert number.endswith("-000001") and first.json["balance"] == "0.00"
    again = api.post(f"{stay['f']}/invoice")
    assert again.status_code == 200 and again.json["number"] == number
    pdf = api.get(f"{stay['f']}/invoice", params={"format": "pdf"})
    assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
    assert pdf.content.startswith(b"%PDF-1.4") and pdf.content.rstrip().endswith(b"%%EOF")
    assert number.encode() in pdf.content
    assert api.get(f"{stay['f']}/invoice").json["number"] == number


def test_another_env_cannot_see_or_post_to_the_folio(api, stay):
    import uuid

    other = api.for_env(uuid.uuid4())
    assert_problem(other.get(stay["f"]), 404)
    assert_problem(other.post(f"{stay['f']}/charges", {"transaction_code": "FB", "amount": "1"}),
                   404)
    with pytest.raises(AssertionError):
        assert_problem(api.get(stay["f"]), 404)


def test_folio_of_room_charges_posted_by_audit_match_lines(api, ctx, stay):
    from pms.services.night_audit.end_of_day import Hooks, run_night_audit

    run_night_audit(ctx, stay["hotel"].id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    folio = api.get(stay["f"]).json
    assert Decimal(folio["charges_total"]) == lines_sum(folio)
    with read_scope(ctx):
        assert FolioCharge.select().where(FolioCharge.kind == "room").count() == 1
