"""The company's receivable ledger's rules through the HTTP API, on SQLite and PostgreSQL:
invoice numbers per property and series without gaps, a write-off is an entry posted to the
ledger, and what cannot be matched is a 4xx naming why."""

from __future__ import annotations

import uuid
from decimal import Decimal

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, outbox_rows


def _billed(corp, n: int) -> None:  # noqa: F811
    for _ in range(n):
        res = corp.book(corp.bill)
        corp.check_in(res)
        assert corp.check_out(res).status_code == 200


def _items(corp, kind: str = "DIRECT_BILL") -> list[dict]:  # noqa: F811
    data = corp.api.get(f"{corp.base}/receivable-account/items").json["data"]
    return [i for i in data if i["kind"] == kind]


def test_invoice_numbers_run_per_series_without_gaps(corp):  # noqa: F811
    _billed(corp, 3)
    ar, code = f"{corp.base}/receivable-account", corp.hotel.prop.code
    a, b, c = (i["id"] for i in _items(corp))
    numbers = [corp.api.post(f"{ar}/invoices", body).json["number"] for body in (
        {"item_ids": [a]}, {"item_ids": [b], "series": "B"}, {"item_ids": [c]})]
    assert numbers == [f"AR-{code}-000001", f"B-{code}-000001", f"AR-{code}-000002"]
    # an item already on an invoice is refused, naming it; nothing is numbered for it
    problem = assert_problem(corp.api.post(f"{ar}/invoices", {"item_ids": [a]}), 409,
                             "receivable_item_not_open")
    assert problem["item_ids"] == [a]
    assert_problem(corp.api.post(f"{ar}/invoices", {"item_ids": [str(uuid.uuid4())]}), 422,
                   "unknown_reference")
    assert corp.api.post(f"{ar}/invoices", {"item_ids": []}).status_code == 422
    assert corp.api.post(f"{ar}/invoices", {"series": "bad series"}).status_code == 422


def test_a_write_off_is_an_entry_posted_to_the_ledger(corp, ctx):  # noqa: F811
    _billed(corp, 1)
    ar = f"{corp.base}/receivable-account"
    [item] = _items(corp)
    assert_problem(corp.api.post(f"{ar}/write-offs", {
        "item_id": item["id"], "amount": "100.01", "reason": "x"}), 409,
        "receivable_item_not_open")
    resp = corp.api.post(f"{ar}/write-offs", {"item_id": item["id"], "amount": "30.00",
                                              "reason": "disputed minibar"})
    assert resp.status_code == 201, resp.text
    assert (resp.json["kind"], resp.json["amount"]) == ("WRITE_OFF", "-30.00")
    assert corp.account()["open_balance"] == "70.00"
    ledger = corp.platform.ledger
    assert ledger.balance(corp.api.env_id, f"company_receivable:{corp.company}") == Decimal("70")
    assert ledger.balance(corp.api.env_id, "ar_write_off") == Decimal("30")
    assert corp.api.get(f"{ar}/aging").json["total_open"] == "70.00"
    assert any(e.type == "hotel:pms:company_receivable_account:written_off"
               for e in outbox_rows(ctx))


def test_credit_is_held_until_applied_and_never_applied_twice(corp):  # noqa: F811
    _billed(corp, 1)
    ar = f"{corp.base}/receivable-account"
    invoice = corp.api.post(f"{ar}/invoices", {}).json
    cur = corp.hotel.prop.currency_code
    paid = corp.api.post(f"{ar}/payments", {"amount": "40.00", "currency": cur,
                                            "reference": "CHQ-1"}).json
    assert corp.api.get(f"{ar}/aging").json["unapplied_credit"] == "40.00"
    assert_problem(corp.api.post(f"{ar}/items/{paid['id']}/apply", {
        "invoice_id": invoice["id"], "amount": "40.01"}), 409, "receivable_item_not_open")
    out = corp.api.post(f"{ar}/items/{paid['id']}/apply", {"invoice_id": invoice["id"]})
    assert out.status_code == 200, out.text
    assert out.json["open_amount"] == "60.00"
    assert_problem(corp.api.post(f"{ar}/items/{paid['id']}/apply", {
        "invoice_id": invoice["id"]}), 409, "receivable_item_not_open")
    [bill] = _items(corp)  # a bill is not a credit
    assert_problem(corp.api.post(f"{ar}/items/{bill['id']}/apply", {
        "invoice_id": invoice["id"]}), 409, "receivable_item_not_open")
    assert_problem(corp.api.post(f"{ar}/payments", {
        "amount": "1.00", "currency": cur, "reference": "x",
        "invoice_id": str(uuid.uuid4())}), 422, "unknown_reference")
    assert corp.api.get(f"{ar}/statement?from_date=not-a-date").status_code == 422
