"""A company's payment terms and its invoices' due dates, through the HTTP API on SQLite and
PostgreSQL: the env-level receivable holds payment_terms_days (0..365), an invoice is due the
issue date plus the terms, frozen at issue; the aging report ages by due date with basis=due
(current = not yet due, 1-30, 31-60, 61-90, 90+ overdue), the statement shows the due dates and
the account read what is overdue."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from pms.db.uow import unit_of_work
from pms.models import Property
from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, outbox_rows


def _billed(corp, n: int) -> list[str]:  # noqa: F811
    for _ in range(n):
        res = corp.book(corp.bill)
        corp.check_in(res)
        assert corp.check_out(res).status_code == 200
    data = corp.api.get(f"{corp.base}/receivable-account/items").json["data"]
    return [i["id"] for i in data if i["kind"] == "DIRECT_BILL"]


def _terms(corp, days: int | None) -> object:  # noqa: F811
    body = {"credit_limit": "500.00", "currency": corp.hotel.prop.currency_code}
    if days is not None:
        body["payment_terms_days"] = days
    return corp.api.put(f"/v1/companies/{corp.company}/receivable", body)


def _aging(corp, as_of: date, basis: str | None = "due") -> dict:  # noqa: F811
    params = {"as_of": as_of.isoformat()} | ({} if basis is None else {"basis": basis})
    resp = corp.api.get(f"{corp.base}/receivable-account/aging", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json


def _buckets(aging: dict) -> dict[str, str]:
    return {b["name"]: b["amount"] for b in aging["buckets"]}


def test_payment_terms_are_kept_at_env_level_and_changing_them_is_an_event(corp, ctx):  # noqa: F811
    env_path = f"/v1/companies/{corp.company}/receivable"
    assert corp.api.get(env_path).json["payment_terms_days"] == 30  # the default
    changed = _terms(corp, 14)
    assert changed.status_code == 200, changed.text
    assert changed.json["payment_terms_days"] == 14
    assert corp.account()["payment_terms_days"] == 14  # the property path: the same account
    updated = [e for e in outbox_rows(ctx)
               if e.type == "hotel:pms:company_receivable_account:updated"]
    assert [e.data["payment_terms_days"] for e in updated] == [14]
    assert _terms(corp, None).json["payment_terms_days"] == 14  # omitted: kept
    assert _terms(corp, 14).status_code == 200
    assert len([e for e in outbox_rows(ctx)
                if e.type == "hotel:pms:company_receivable_account:updated"]) == 1
    for bad in (-1, 366, "30"):
        assert_problem(_terms(corp, bad), 422)
    assert corp.api.get(env_path).json["payment_terms_days"] == 14


def test_an_invoice_is_due_after_the_terms_frozen_at_issue_and_ages_by_due_date(
        corp, ctx):  # noqa: F811
    ar = f"{corp.base}/receivable-account"
    assert _terms(corp, 14).status_code == 200
    first, second, third = _billed(corp, 3)
    today = corp.hotel.today
    a = corp.api.post(f"{ar}/invoices", {"item_ids": [first]}).json
    assert (a["issued_on"], a["due_on"]) == (today.isoformat(),
                                             (today + timedelta(days=14)).isoformat())
    assert _terms(corp, 45).status_code == 200  # new terms: the issued invoice keeps its date
    assert corp.api.get(f"{ar}/invoices/{a['id']}").json["due_on"] == a["due_on"]
    b = corp.api.post(f"{ar}/invoices", {"item_ids": [second]}).json
    assert b["due_on"] == (today + timedelta(days=45)).isoformat()
    # the third item is not invoiced: no due date, never overdue
    def due(days: int, basis: str | None = "due") -> dict:
        return _aging(corp, today + timedelta(days=days), basis)

    now = due(0)
    assert now["basis"] == "due" and now["overdue"] == "0.00"
    assert _buckets(now) == {"current": "300.00", "days_1_30": "0.00", "days_31_60": "0.00",
                             "days_61_90": "0.00", "days_90_plus": "0.00"}
    assert _buckets(due(14))["current"] == "300.00"  # due today is not overdue yet
    later = due(15)  # a: 1 day past due
    assert _buckets(later)["days_1_30"] == "100.00" and later["overdue"] == "100.00"
    assert _buckets(due(44))["days_1_30"] == "100.00"  # a: 30 days past due
    assert _buckets(due(45))["days_31_60"] == "100.00"  # a: 31
    far = due(100)  # a: 86 days past due, b: 55
    assert (_buckets(far)["days_61_90"], _buckets(far)["days_31_60"],
            _buckets(far)["current"]) == ("100.00", "100.00", "100.00")
    assert far["overdue"] == "200.00"
    farther = due(106)  # a: 92 days past due
    assert _buckets(farther)["days_90_plus"] == "100.00"
    for aging in (now, later, far, farther):  # the buckets add up to what is open
        assert sum(Decimal(v) for v in _buckets(aging).values()) == Decimal(
            aging["total_open"]) == Decimal("300.00")
    # the default basis is days since billed: its buckets are the flat ones
    billed = due(100, basis=None)
    assert billed["basis"] == "billed"
    assert _buckets(billed) == {"current": billed["current"], "days_30": billed["days_30"],
                                "days_60": billed["days_60"],
                                "days_90_plus": billed["days_90_plus"]}
    assert billed["days_90_plus"] == "300.00"
    assert_problem(corp.api.get(f"{ar}/aging", params={"basis": "issued"}), 422)
    # the statement shows each entry's invoice and its due date
    lines = {ln["item_id"]: ln for ln in corp.api.get(f"{ar}/statement").json["lines"]}
    assert (lines[first]["invoice_number"], lines[first]["due_on"]) == (a["number"],
                                                                        a["due_on"])
    assert lines[second]["due_on"] == b["due_on"] and lines[third]["due_on"] is None
    # the account read: nothing overdue today; 20 days on (the night audit moved the
    # property's business date), invoice a is
    assert corp.account()["overdue"] == "0.00"
    with unit_of_work(ctx):
        Property.update(business_date=today + timedelta(days=20)).where(
            Property.id == corp.hotel.id).execute()
    late = corp.api.get(f"{ar}")
    assert late.status_code == 200, late.text
    assert late.json["overdue"] == "100.00"
    assert corp.api.get(f"/v1/companies/{corp.company}/receivable").json["overdue"] == "100.00"
    # a payment applied to it: nothing overdue any more
    paid = corp.api.post(f"{ar}/payments", {"amount": "100.00", "invoice_id": a["id"],
                                            "currency": corp.hotel.prop.currency_code,
                                            "reference": "WIRE-1"})
    assert paid.status_code == 201, paid.text
    assert paid.json["account"]["overdue"] == "0.00"


def test_an_invoice_may_name_its_own_terms(corp):  # noqa: F811
    ar = f"{corp.base}/receivable-account"
    [item] = _billed(corp, 1)
    inv = corp.api.post(f"{ar}/invoices", {"item_ids": [item], "due_days": 0}).json
    assert inv["due_on"] == inv["issued_on"]
    assert_problem(corp.api.post(f"{ar}/invoices", {"due_days": 400}), 422)
