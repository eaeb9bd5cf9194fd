"""The company's exposure is read from its open items only, on SQLite and PostgreSQL: a
company with a longer checked-out history reads the receivable account (and checks a booking
against its limit) with the same statements carrying the same number of values as one with a
short history. Counted from the database driver's log (every statement peewee sends), never
timed."""

from __future__ import annotations

from playhouse.test_utils import count_queries

from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)


def _shape(corp) -> list[tuple[str, int]]:  # noqa: F811
    with count_queries() as counted:
        resp = corp.api.get(f"{corp.base}/receivable-account")
    assert resp.status_code == 200, resp.text
    return [(q.msg[0], len(q.msg[1] or ())) for q in counted.get_queries()]


def _stay_through(corp) -> None:  # noqa: F811
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    assert corp.api.post(f"{corp.base}/receivable-account/payments", {
        "amount": "100.00", "currency": corp.hotel.prop.currency_code,
        "reference": "W"}).status_code == 201


def test_the_exposure_reads_the_same_with_a_longer_history(corp):  # noqa: F811
    corp.book(corp.bill)  # one open item throughout
    _stay_through(corp)
    _shape(corp)  # first use (caches)
    short = _shape(corp)
    for _ in range(4):
        _stay_through(corp)
    assert corp.account()["exposure"]["future_stays"] == "100.00"
    assert _shape(corp) == short
