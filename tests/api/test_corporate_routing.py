"""Routing by charge type through the HTTP API, on SQLite and PostgreSQL: the company's contract
routing ("company pays room and tax, the guest pays incidentals") is copied onto the stays
billed to it; check-out moves only the routed lines to the company, the rest stays the guest's;
the credit checks count the same share, so an incidental charge on a routed stay is never held
to the company's limit."""

from __future__ import annotations

from typing import Any

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem

# make_booking_hotel prices a night at 100.00 (no room taxes); the corp fixture's limit 500.00


def minibar(corp) -> None:  # noqa: F811
    """A minibar code with 7% VAT included: a 21.40 charge is 20.00 and a 1.40 tax line."""
    resp = corp.api.post(f"/v1/properties/{corp.hotel.id}/transaction-codes", {
        "code": "MB", "name": "Minibar", "category": "mini bar",
        "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True}]})
    assert resp.status_code == 201, resp.text


def charge(corp, res: str, amount: str) -> Any:  # noqa: F811
    folio = corp.api.get(f"{corp.res}/{res}/folio").json["id"]
    return corp.api.post(f"/v1/properties/{corp.hotel.id}/folios/{folio}/charges",
                         {"transaction_code": "MB", "amount": amount})


def contract(corp, **body: Any) -> dict[str, Any]:  # noqa: F811
    resp = corp.api.put(f"{corp.base}/routing-instructions", body)
    assert resp.status_code == 200, resp.text
    return resp.json


def test_company_pays_room_and_tax_the_guest_pays_the_minibar(corp):  # noqa: F811
    minibar(corp)
    assert contract(corp, categories=["ROOM", "TAX"])["categories"] == ["room", "tax"]
    res = corp.book(corp.bill)
    billing = corp.api.get(f"{corp.res}/{res}/company-billing").json
    assert billing["categories"] == ["room", "tax"]  # the contract, copied onto the stay
    corp.check_in(res)
    assert charge(corp, res, "21.40").status_code == 201
    billing = corp.api.get(f"{corp.res}/{res}/company-billing").json
    assert (billing["company_pays"], billing["guest_pays"]) == ("100.00", "21.40")
    # the guest owes the minibar (and its tax) before leaving
    assert_problem(corp.check_out(res), 409, "folio_not_closable")
    corp.pay(res, "21.40")
    assert corp.check_out(res).status_code == 200
    assert corp.account()["open_balance"] == "100.00"
    [item] = corp.api.get(f"{corp.base}/receivable-account/items").json["data"]
    assert item["kind"] == "DIRECT_BILL" and item["amount"] == "100.00"
    assert item["reservation_id"] == res and {ln["category"] for ln in item["lines"]} == {"room"}


def test_without_a_contract_the_company_pays_the_whole_folio(corp):  # noqa: F811
    minibar(corp)
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert charge(corp, res, "21.40").status_code == 201
    billing = corp.api.get(f"{corp.res}/{res}/company-billing").json
    assert (billing["company_pays"], billing["guest_pays"]) == ("121.40", "0.00")
    assert corp.check_out(res).status_code == 200
    assert corp.account()["open_balance"] == "121.40"


def test_a_stay_routed_by_transaction_code_with_a_cap(corp):  # noqa: F811
    minibar(corp)
    res = corp.book()
    corp.check_in(res)
    assert charge(corp, res, "53.50").status_code == 201  # 50.00 and 3.50 VAT
    resp = corp.api.put(f"{corp.res}/{res}/company-billing", {
        "company_profile_id": corp.company, "company_payment_method_id": corp.bill,
        "transaction_codes": ["MB"], "cap": "40.00"})
    assert resp.status_code == 200, resp.text
    assert (resp.json["company_pays"], resp.json["guest_pays"]) == ("40.00", "113.50")


def test_the_credit_check_counts_only_what_the_routing_sends_to_the_company(corp):  # noqa: F811
    minibar(corp)
    corp.limit("150.00")
    contract(corp, categories=["room", "tax"])
    res = corp.book(corp.bill)
    corp.check_in(res)
    # the minibar is the guest's: not held to the company's limit
    assert charge(corp, res, "400.00").status_code == 201
    assert corp.account()["exposure"]["open_folios"] == "0.00"
    # control: the same charge on a stay routed whole is the company's, and refused
    whole = corp.book()
    corp.check_in(whole)
    assert corp.api.put(f"{corp.res}/{whole}/company-billing", {
        "company_profile_id": corp.company, "company_payment_method_id": corp.bill,
        "categories": []}).status_code == 200
    assert_problem(charge(corp, whole, "400.00"), 409, "credit_limit_exceeded")


def test_a_routing_naming_no_line_kind_or_a_bad_one_is_422(corp):  # noqa: F811
    resp = corp.api.put(f"{corp.base}/routing-instructions", {"categories": ["x" * 17]})
    assert resp.status_code == 422
    resp = corp.api.put(f"{corp.base}/routing-instructions", {"cap": "-1"})
    assert resp.status_code == 422
