"""A check-out reverted after the company paid its direct bill, through the HTTP API on SQLite
and PostgreSQL: the reversal is an entry of its own on the receivable account; `open_balance`
never goes below zero, what the company had paid is held for it (`credit_balance`) and its
next direct bill takes it first."""

from __future__ import annotations

from decimal import Decimal

from tests.api.test_company_direct_bill import _events, corp  # noqa: F401  (the fixture)


def _pay(corp, amount: str) -> None:  # noqa: F811
    resp = corp.api.post(f"{corp.base}/receivable-account/payments", {
        "amount": amount, "currency": corp.hotel.prop.currency_code, "reference": "WIRE"})
    assert resp.status_code == 201, resp.text


def _balances(corp) -> tuple[str, str]:  # noqa: F811
    account = corp.account()
    return account["open_balance"], account["credit_balance"]


def test_a_revert_after_the_company_paid_holds_the_payment_as_credit(corp, ctx):  # noqa: F811
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    _pay(corp, "100.00")
    assert _balances(corp) == ("0.00", "0.00")
    resp = corp.api.post(f"{corp.res}/{res}/revert", {"reason": "guest stays on"})
    assert resp.status_code == 200, resp.text
    assert _balances(corp) == ("0.00", "100.00")
    [event] = _events(ctx, "hotel:pms:company_receivable_account:direct_bill_reversed")
    assert (event.data["amount"], event.data["credited"], event.data["open_balance"],
            event.data["credit_balance"]) == ("100.00", "100.00", "0.00", "100.00")
    folio = corp.api.get(f"{corp.res}/{res}/folio").json
    assert Decimal(folio["posted_balance"]) == Decimal("100.00")  # the folio owes it again
    # checked out again: the held credit pays the new direct bill first
    assert corp.check_out(res).status_code == 200
    assert _balances(corp) == ("0.00", "0.00")
    [_, again] = _events(ctx, "hotel:pms:company_receivable_account:direct_billed")
    assert again.data["credit_applied"] == "100.00"


def test_a_revert_after_a_part_payment_lowers_the_balance_to_zero_and_credits_the_rest(corp, ctx):  # noqa: F811
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    _pay(corp, "40.00")
    assert _balances(corp) == ("60.00", "0.00")
    assert corp.api.post(f"{corp.res}/{res}/revert", {"reason": "x"}).status_code == 200
    assert _balances(corp) == ("0.00", "40.00")


def test_the_credit_held_is_not_checked_against_the_limit_again(corp):  # noqa: F811
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    _pay(corp, "100.00")
    assert corp.api.post(f"{corp.res}/{res}/revert", {"reason": "x"}).status_code == 200
    corp.limit("250.00")
    corp.book(corp.bill)  # 100.00 in house + 100.00 ahead
    corp.limit("150.00")
    # checking out again needs nothing new: the held 100.00 pays it
    resp = corp.check_out(res)
    assert resp.status_code == 200, resp.text
    assert _balances(corp) == ("0.00", "0.00")
