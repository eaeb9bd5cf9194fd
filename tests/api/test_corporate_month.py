"""A stretch of corporate business end to end, through the HTTP API on SQLite and PostgreSQL: a
company with a credit limit, travelers booking under it, a re-classification refused past the
limit, check-outs that route their folios to the company, the company paying, a check-out
reverted after it paid and checked out again. At every step what the account shows (open
balance less the credit held for the company) equals what was billed less what was paid, and
the company's ledger account says the same."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem

# make_booking_hotel prices a night at 100.00; the corp fixture's limit is 500.00


def test_a_month_of_corporate_business_keeps_the_receivable_equal_to_billed_less_paid(corp):  # noqa: F811
    cur = corp.hotel.prop.currency_code
    billed = paid = Decimal(0)

    def check() -> None:
        account = corp.account()
        held = Decimal(account["open_balance"]) - Decimal(account["credit_balance"])
        assert held == billed - paid, account
        assert Decimal(account["open_balance"]) >= 0
        ledger = corp.platform.ledger.balance(corp.api.env_id,
                                              f"company_receivable:{corp.company}")
        assert Decimal(ledger) == billed - paid

    def pay(amount: str) -> None:
        nonlocal paid
        resp = corp.api.post(f"{corp.base}/receivable-account/payments", {
            "amount": amount, "currency": cur, "reference": f"WIRE-{amount}"})
        assert resp.status_code == 201, resp.text
        paid += Decimal(amount)

    def check_out(res: str) -> None:
        nonlocal billed
        resp = corp.check_out(res)
        assert resp.status_code == 200, resp.text
        billed += Decimal("100.00")

    # travelers book under the company: two stays billed to it, one on its card (POSTPAY)
    ann, bob = corp.book(corp.bill), corp.book(corp.bill)
    carol = corp.book(corp.postpay, nights=4)
    assert corp.account()["exposure"]["future_stays"] == "200.00"
    check()
    # moving the card's stays onto the account would pass the limit: refused, nothing moves
    problem = assert_problem(corp.api.post(
        f"{corp.base}/payment-methods/{corp.postpay}/approve",
        {"approval": "BILL_TO_COMPANY"}), 409, "credit_limit_exceeded")
    assert problem["reservation_ids"] == [carol] and problem["needed"] == "400.00"
    assert corp.account()["exposure"]["future_stays"] == "200.00"
    # check-outs route the folios to the company
    corp.check_in(ann)
    check_out(ann)
    check()
    pay("60.00")
    check()
    corp.check_in(bob)
    check_out(bob)
    check()
    pay("140.00")  # paid in full
    check()
    assert corp.account()["open_balance"] == "0.00"
    # a check-out reverted after the company paid: an entry of its own, never below zero
    resp = corp.api.post(f"{corp.res}/{bob}/revert", {"reason": "guest stays on"})
    assert resp.status_code == 200, resp.text
    billed -= Decimal("100.00")
    check()
    assert (corp.account()["open_balance"], corp.account()["credit_balance"]) == (
        "0.00", "100.00")
    check_out(bob)  # the credit held pays it
    check()
    assert (corp.account()["open_balance"], corp.account()["credit_balance"]) == (
        "0.00", "0.00")
    assert (billed, paid) == (Decimal("200.00"), Decimal("200.00"))


def test_a_month_on_the_receivable_ledger_invoices_payments_and_reversals_add_up(corp, ctx):  # noqa: F811
    """The issue's month: a contract (room and tax to the company, incidentals to the guest)
    with payment terms, travelers booking under it, check-outs that route, an invoice due
    after the terms, a partial payment applied to it, a reversal, aging (by days since billed
    and by due date) and a statement that equal the ledger's movements."""
    from datetime import timedelta

    from tests.api.test_corporate_routing import charge, contract, minibar
    from tests.helpers import outbox_rows

    ar = f"{corp.base}/receivable-account"
    cur = corp.hotel.prop.currency_code

    def check() -> dict[str, Any]:
        account = corp.account()
        net = Decimal(account["open_balance"]) - Decimal(account["credit_balance"])
        ledger = corp.platform.ledger.balance(corp.api.env_id,
                                              f"company_receivable:{corp.company}")
        statement = corp.api.get(f"{ar}/statement").json
        aging = corp.api.get(f"{ar}/aging").json
        by_due = corp.api.get(f"{ar}/aging", params={"basis": "due"}).json
        assert Decimal(statement["closing_balance"]) == net == Decimal(ledger)
        assert sum(Decimal(ln["amount"]) for ln in statement["lines"]) == net
        assert Decimal(aging["net"]) == net == Decimal(by_due["net"])
        assert Decimal(aging["total_open"]) == sum(Decimal(aging[k]) for k in (
            "current", "days_30", "days_60", "days_90_plus"))
        assert Decimal(by_due["total_open"]) == sum(
            Decimal(b["amount"]) for b in by_due["buckets"]) == Decimal(aging["total_open"])
        return aging

    def pay(amount: str, invoice: str | None = None) -> dict[str, Any]:
        body = {"amount": amount, "currency": cur, "reference": f"WIRE-{amount}"}
        if invoice is not None:
            body["invoice_id"] = invoice
        resp = corp.api.post(f"{ar}/payments", body)
        assert resp.status_code == 201, resp.text
        return resp.json

    minibar(corp)
    contract(corp, categories=["room", "tax"])
    assert corp.api.put(f"/v1/companies/{corp.company}/receivable", {
        "credit_limit": "500.00", "currency": cur, "payment_terms_days": 21}).status_code == 200
    ann, bob = corp.book(corp.bill), corp.book(corp.bill)
    # check-outs that route: the company takes the room, the guest pays the minibar
    corp.check_in(ann)
    assert charge(corp, ann, "21.40").status_code == 201
    corp.pay(ann, "21.40")
    assert corp.check_out(ann).status_code == 200
    corp.check_in(bob)
    assert corp.check_out(bob).status_code == 200
    assert check()["current"] == "200.00"
    # an invoice groups the open items, numbered per property and series
    resp = corp.api.post(f"{ar}/invoices", {})
    assert resp.status_code == 201, resp.text
    first = resp.json
    assert first["number"] == f"AR-{corp.hotel.prop.code}-000001"
    assert (first["total"], first["open_amount"], len(first["items"])) == ("200.00", "200.00", 2)
    assert first["due_on"] == (corp.hotel.today + timedelta(days=21)).isoformat()
    assert_problem(corp.api.post(f"{ar}/invoices", {}), 409, "receivable_item_not_open")
    # a partial payment applied to it: the oldest item first
    pay("150.00", first["id"])
    first = corp.api.get(f"{ar}/invoices/{first['id']}").json
    assert (first["open_amount"], first["status"]) == ("50.00", "OPEN")
    assert check()["current"] == "50.00"
    later = corp.api.get(
        f"{ar}/aging?as_of={(corp.hotel.today + timedelta(days=45)).isoformat()}").json
    assert (later["current"], later["days_30"]) == ("0.00", "50.00")
    # by due date: 45 days after issue the invoice is 24 days overdue
    overdue = corp.api.get(f"{ar}/aging", params={
        "as_of": (corp.hotel.today + timedelta(days=45)).isoformat(), "basis": "due"}).json
    assert {b["name"]: b["amount"] for b in overdue["buckets"]} == {
        "current": "0.00", "days_1_30": "50.00", "days_31_60": "0.00", "days_61_90": "0.00",
        "days_90_plus": "0.00"}
    assert overdue["overdue"] == "50.00" and corp.account()["overdue"] == "0.00"  # not yet
    # a reversal: bob's check-out reverted closes what is open of his bill; what the company
    # had already paid of it is held as credit
    assert corp.api.post(f"{corp.res}/{bob}/revert", {"reason": "stays on"}).status_code == 200
    aging = check()
    assert (aging["total_open"], aging["unapplied_credit"], aging["net"]) == (
        "0.00", "50.00", "-50.00")
    assert corp.api.get(f"{ar}/invoices/{first['id']}").json["status"] == "PAID"
    # bob leaves again: a new item, a second invoice with the next number
    assert corp.check_out(bob).status_code == 200
    check()
    second = corp.api.post(f"{ar}/invoices", {"series": "AR"}).json
    assert second["number"] == f"AR-{corp.hotel.prop.code}-000002"
    [credit] = [i for i in corp.api.get(f"{ar}/items?open=true").json["data"]
                if i["kind"] == "REVERSAL"]
    resp = corp.api.post(f"{ar}/items/{credit['id']}/apply", {"invoice_id": second["id"]})
    assert resp.status_code == 200, resp.text
    assert resp.json["open_amount"] == "50.00"
    check()
    pay("50.00", second["id"])
    assert corp.api.get(f"{ar}/invoices/{second['id']}").json["status"] == "PAID"
    aging = check()
    assert (aging["total_open"], aging["unapplied_credit"], aging["net"]) == (
        "0.00", "0.00", "0.00")
    lines = corp.api.get(f"{ar}/statement").json["lines"]
    kinds = [ln["kind"] for ln in lines]
    assert kinds == ["DIRECT_BILL", "DIRECT_BILL", "PAYMENT", "REVERSAL", "DIRECT_BILL",
                     "PAYMENT"]
    # the bills show their invoice's due date (both issued today with the same terms)
    assert [ln["due_on"] for ln in lines if ln["kind"] == "DIRECT_BILL"] == [
        first["due_on"], first["due_on"], second["due_on"]]
    events = {e.type.rsplit(":", 1)[1] for e in outbox_rows(ctx)
              if e.type.startswith("hotel:pms:company_receivable_account:")}
    assert {"direct_billed", "invoice_issued", "payment_received", "direct_bill_reversed",
            "credit_applied"} <= events
