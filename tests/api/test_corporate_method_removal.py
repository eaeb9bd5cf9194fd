"""A company payment method that open stays are routed through cannot be deleted (409
payment_method_in_use naming them), through the HTTP API on SQLite and PostgreSQL: deleting it
would silently hand the whole folio back to the guest at check-out."""

from __future__ import annotations

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, counts


def test_a_method_with_routed_stays_is_not_deleted(corp, ctx):  # noqa: F811
    confirmed = corp.book(corp.bill)
    in_house = corp.book(corp.bill)
    corp.check_in(in_house)
    url = f"{corp.base}/payment-methods/{corp.bill}"
    before = counts(ctx)
    problem = assert_problem(corp.api.delete(url), 409, "payment_method_in_use")
    assert problem["reservation_ids"] == sorted([confirmed, in_house])
    assert counts(ctx) == before
    preview = corp.api.get(f"{corp.res}/{in_house}/company-billing").json
    assert (preview["approval"], preview["guest_pays"]) == ("BILL_TO_COMPANY", "0.00")
    # the stays leave it (check-out, cancel, an explicit unrouting): then it may go
    assert corp.check_out(in_house).status_code == 200
    assert corp.api.delete(f"{corp.res}/{confirmed}/company-billing").status_code == 204
    assert corp.api.delete(url).status_code == 204


def test_a_method_without_open_stays_is_deleted(corp):  # noqa: F811
    res = corp.book(corp.postpay)
    assert corp.api.post(f"{corp.res}/{res}/cancel", {}).status_code == 200
    assert corp.api.delete(f"{corp.base}/payment-methods/{corp.postpay}").status_code == 204
