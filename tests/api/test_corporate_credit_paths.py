"""Every path that adds to a company's exposure checks its credit limit the same way (one
function, `company_billing.admit_exposure`), through the HTTP API on SQLite and PostgreSQL: a
booking, a routing, a method re-classified POSTPAY -> BILL_TO_COMPANY (the stays routed
through it join the exposure) and a charge on a routed in-house folio. Refused: 409
credit_limit_exceeded, nothing written, so no guest is trapped at check-out."""

from __future__ import annotations

from decimal import Decimal

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, counts

# make_booking_hotel prices a night at 100.00; the corp fixture's limit is 500.00


def test_reclassifying_a_postpay_method_past_the_limit_is_refused(corp, ctx):  # noqa: F811
    res = corp.book(corp.postpay, nights=6)  # POSTPAY: not held to the limit (600.00)
    url = f"{corp.base}/payment-methods/{corp.postpay}/approve"
    before = counts(ctx)
    problem = assert_problem(corp.api.post(url, {"approval": "BILL_TO_COMPANY"}), 409,
                             "credit_limit_exceeded")
    assert problem["needed"] == "600.00" and problem["credit_limit"] == "500.00"
    assert problem["reservation_ids"] == [res]
    assert counts(ctx) == before
    [method] = [m for m in corp.api.get(f"{corp.base}/payment-methods").json["data"]
                if m["id"] == corp.postpay]
    assert method["approval"] == "POSTPAY"
    assert corp.account()["exposure"]["future_stays"] == "0.00"
    # the guest is not trapped: check-out charges the company's card as before
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200


def test_reclassifying_under_the_limit_moves_the_stays_into_the_exposure(corp):  # noqa: F811
    corp.book(corp.postpay, nights=3)
    url = f"{corp.base}/payment-methods/{corp.postpay}/approve"
    resp = corp.api.post(url, {"approval": "BILL_TO_COMPANY"})
    assert resp.status_code == 200, resp.text
    assert corp.account()["exposure"]["future_stays"] == "300.00"
    # an in-house stay's folio balance counts as check-out would settle it
    corp.api.post(f"{corp.base}/payment-methods/{corp.postpay}/approve", {"approval": "POSTPAY"})
    res = corp.book(corp.postpay, nights=1)
    corp.check_in(res)
    corp.charge(res, "450.00")
    problem = assert_problem(corp.api.post(url, {"approval": "BILL_TO_COMPANY"}), 409,
                             "credit_limit_exceeded")
    assert Decimal(problem["needed"]) >= Decimal("750.00")


def test_a_charge_on_a_routed_in_house_folio_is_held_to_the_limit(corp, ctx):  # noqa: F811
    corp.limit("150.00")
    res = corp.book(corp.bill)  # 100.00 of 150.00
    corp.check_in(res)
    folio = corp.folio(res)
    base = f"/v1/properties/{corp.hotel.id}"
    code = corp.api.post(f"{base}/transaction-codes", {
        "code": "FB", "name": "Food", "category": "other"})
    assert code.status_code == 201, code.text
    url = f"{base}/folios/{folio.id}/charges"
    ok = corp.api.post(url, {"transaction_code": "FB", "amount": "40.00"})
    assert ok.status_code == 201, ok.text
    before = counts(ctx)
    problem = assert_problem(corp.api.post(url, {"transaction_code": "FB", "amount": "200.00"}),
                             409, "credit_limit_exceeded")
    assert problem["needed"] == "200.00" and problem["reservation_id"] == res
    assert counts(ctx) == before
    # a capped routing: the guest pays what is over the cap, so a charge past it is the guest's
    corp.api.put(f"{corp.res}/{res}/company-billing", {
        "company_profile_id": corp.company, "company_payment_method_id": corp.bill,
        "cap": "100.00"})
    assert corp.api.post(url, {"transaction_code": "FB", "amount": "200.00"}).status_code == 201
    assert corp.api.get(f"{corp.res}/{res}/company-billing").json["company_pays"] == "100.00"
