"""A receivable account's currency through the HTTP API, on SQLite and PostgreSQL: it is an ISO
4217 code one of the env's properties keeps its accounts in (422), and it cannot change while
anything is open on the account (a balance, stays routed to the company, ACTIVE credit
overrides: 409 receivable_account_in_use naming them)."""

from __future__ import annotations

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.factories import make_property
from tests.helpers import assert_problem, counts


def _put(corp, currency: str, limit: str = "500.00"):  # noqa: F811
    return corp.api.put(f"{corp.base}/receivable-account",
                        {"credit_limit": limit, "currency": currency})


def test_the_currency_is_iso_4217_and_one_the_properties_keep(corp, ctx):  # noqa: F811
    before = counts(ctx)
    problem = assert_problem(_put(corp, "ZZZ"), 422, "unknown_currency")
    assert problem["errors"][0]["field"] == "currency"
    assert_problem(_put(corp, "JPY"), 422, "currency_not_used")  # no JPY property here
    assert counts(ctx) == before
    make_property(ctx, currencyCode="JPY")
    resp = _put(corp, "JPY", "50000")  # nothing open yet: the currency may change
    assert resp.status_code == 200, resp.text
    assert resp.json["currency"] == "JPY"


def test_the_currency_does_not_change_under_a_balance(corp, ctx):  # noqa: F811
    make_property(ctx, currencyCode="JPY")
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    before = counts(ctx)
    problem = assert_problem(_put(corp, "JPY"), 409, "receivable_account_in_use")
    assert problem["open_balance"] == "100.00" and problem["currency"] == "EUR"
    assert counts(ctx) == before
    account = corp.account()
    assert (account["currency"], account["open_balance"]) == ("EUR", "100.00")
    # the limit alone may still change
    assert _put(corp, "EUR", "900.00").status_code == 200
    # paid off, nothing open: now it may
    cur = corp.hotel.prop.currency_code
    assert corp.api.post(f"{corp.base}/receivable-account/payments", {
        "amount": "100.00", "currency": cur, "reference": "W-1"}).status_code == 201
    assert _put(corp, "JPY", "50000").status_code == 200


def test_the_currency_does_not_change_while_stays_are_routed_or_overrides_active(corp, ctx):  # noqa: F811
    make_property(ctx, currencyCode="JPY")
    res = corp.book(corp.bill)
    problem = assert_problem(_put(corp, "JPY"), 409, "receivable_account_in_use")
    assert problem["routed_reservation_ids"] == [res] and problem["open_balance"] == "0.00"
    assert corp.api.post(f"{corp.res}/{res}/cancel", {}).status_code == 200
    # an ACTIVE override (requested by one staff user, approved by another)
    from pms.devkeys import mint_token

    def staff(sub: str) -> str:
        return mint_token(corp.api.settings, env_id=corp.api.env_id, sub=sub)

    url = f"{corp.base}/credit-overrides"
    expires = "2099-01-01T00:00:00Z"
    ov = corp.api.post(url, {"amount": "100.00", "currency": "EUR", "reason": "fair",
                             "expires_at": expires}, token=staff("staff-a"))
    assert ov.status_code == 201, ov.text
    assert corp.api.post(f"{url}/{ov.json['id']}/approve", None,
                         token=staff("staff-b")).status_code == 200
    problem = assert_problem(_put(corp, "JPY"), 409, "receivable_account_in_use")
    assert problem["active_override_ids"] == [ov.json["id"]]
    assert problem["routed_reservation_ids"] == []
