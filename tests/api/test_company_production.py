"""A corporate account's month through the HTTP API, on SQLite and PostgreSQL, as its credit
manager and its ADMIN see it: travelers and a booker book under the company at two properties
(a negotiated rate, a company user's booking billed to the company, staff's bookings naming it,
a stay routed to it later), one is cancelled, one books nothing for it. The credit manager sets
the chain's credit limit at env level and reads the production by property and month, which the
test computes on its own from the stays it made; the company's ADMIN lists "our bookings", a
TRAVELER only its own, a stranger nothing."""

from __future__ import annotations

import calendar
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from pms.devkeys import mint_token
from tests.factories import load_rates, make_booking_hotel, make_rate_plan, reservation_body
from tests.helpers import assert_problem, outbox_rows, owned_method, random_ref

NEGOTIATED, BAR = Decimal("123.00"), Decimal("100.00")  # make_booking_hotel's BAR is 100.00
CREDIT_MANAGER = ["hotel:pms:companies:read", "hotel:pms:companies:write",
                  "hotel:pms:company_receivables:read", "hotel:pms:company_receivables:write"]


@dataclass
class Stay:
    """A stay the test booked for the company: what production must count of it."""

    id: str
    property_id: str
    arrival: date
    nights: int
    nightly: Decimal


def expected(stays: list[Stay], start: date, end: date,
             property_id: str | None = None) -> dict[tuple[str, str], tuple[int, Decimal, int]]:
    """(property, month) -> (room nights, room revenue, stays), from the stays alone."""
    nights: dict[tuple[str, str], int] = defaultdict(int)
    revenue: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for stay in stays:
        if property_id is not None and stay.property_id != property_id:
            continue
        for i in range(stay.nights):
            day = stay.arrival + timedelta(days=i)
            if start <= day <= end:
                key = (stay.property_id, day.strftime("%Y-%m"))
                nights[key] += 1
                revenue[key] += stay.nightly
                seen[key].add(stay.id)
    return {k: (nights[k], revenue[k], len(seen[k])) for k in nights}


def reported(body: dict[str, Any]) -> dict[tuple[str, str], tuple[int, Decimal, int]]:
    return {(r["property_id"], r["month"]): (r["room_nights"], Decimal(r["room_revenue"]),
                                             r["stays"]) for r in body["rows"]}


def _profile(api: Any, prop: Any, **body: Any) -> str:
    resp = api.post(f"/v1/properties/{prop}/profiles", body)
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def test_a_corporate_accounts_month_seen_by_its_credit_manager_and_its_admin(api, ctx):
    p1, p2 = make_booking_hotel(ctx, rooms=8), make_booking_hotel(ctx, rooms=4)
    neg = make_rate_plan(ctx, p1.id, negotiated=True, code=random_ref("NEG"))
    load_rates(ctx, p1.id, neg.id, p1.room_type.id, amount=str(NEGOTIATED))
    company = _profile(api, p1.id, kind="COMPANY", company_name=random_ref("Acme"),
                       preferences={"negotiated_rate_plan_ids": [str(neg.id)]})
    co1 = f"/v1/properties/{p1.id}/companies/{company}"
    people = {}
    for name, role in (("admin", "ADMIN"), ("booker", "BOOKER"), ("ann", "TRAVELER"),
                       ("carl", "TRAVELER"), ("stranger", None)):
        people[name] = _profile(api, p1.id, first_name=name.title(), last_name="Corp",
                                email=f"{random_ref(name)}@example.com")
        if role is not None:
            resp = api.post(f"{co1}/users", {"traveler_profile_id": people[name], "role": role})
            assert resp.status_code == 201, resp.text
    token = {n: mint_token(api.settings, env_id=api.env_id, holder_id=p) for n, p in people.items()}
    manager = mint_token(api.settings, env_id=api.env_id, sub="credit-manager",
                         scopes=CREDIT_MANAGER)

    # the credit manager sets the chain's credit limit, at env level
    resp = api.put(f"/v1/companies/{company}/receivable",
                   {"credit_limit": "1000.00", "currency": "EUR"}, token=manager)
    assert resp.status_code == 201, resp.text
    pm = api.post(f"{co1}/payment-methods", {"payment_method_id": owned_method(company)})
    assert pm.status_code == 201, pm.text
    bill = pm.json["id"]
    assert api.post(f"{co1}/payment-methods/{bill}/approve",
                    {"approval": "BILL_TO_COMPANY"}).status_code == 200

    today = p1.today
    month_end = today.replace(day=calendar.monthrange(today.year, today.month)[1])
    stays: list[Stay] = []

    def book(hotel: Any, *, as_: str | None = None, arrival: date, nights: int,
             nightly: Decimal, counted: bool = True, **over: Any) -> str:
        body = reservation_body(hotel, arrival_date=arrival.isoformat(),
                                departure_date=(arrival + timedelta(days=nights)).isoformat(),
                                adults=1, **over)
        if "guest_profile_id" in over or as_ is not None:
            body.pop("guest")
        resp = api.post(f"/v1/properties/{hotel.id}/reservations", body,
                        token=token[as_] if as_ else None)
        assert resp.status_code == 201, resp.text
        made = resp.json
        assert [Decimal(n["amount"]) for n in made["nightly_prices"]] == [nightly] * nights
        if counted:
            stays.append(Stay(made["id"], str(hotel.id), arrival, nights, nightly))
        return made["id"]

    # a traveler books itself on the company's negotiated rate (not billed to the company)
    own = book(p1, as_="ann", arrival=today + timedelta(days=1), nights=2, nightly=NEGOTIATED,
               rate_plan_id=str(neg.id), company_profile_id=company)
    # the booker books a traveler of the company, billed to it, across the month's end
    billed = book(p1, as_="booker", arrival=month_end, nights=2, nightly=BAR,
                  guest_profile_id=people["carl"], company_profile_id=company,
                  company_payment_method_id=bill)
    # staff book for the company at the second property (the public rate, not billed)
    there = book(p2, arrival=today, nights=3, nightly=BAR, company_profile_id=company)
    # cancelled: nothing produced; another guest's stay: not the company's
    cancelled = book(p1, arrival=today + timedelta(days=2), nights=1, nightly=BAR,
                     counted=False, company_profile_id=company)
    assert api.post(f"/v1/properties/{p1.id}/reservations/{cancelled}/cancel",
                    None).status_code == 200
    book(p1, arrival=today, nights=1, nightly=BAR, counted=False)
    # a stay booked without a company and routed to it later becomes its booking
    routed = book(p1, arrival=today + timedelta(days=3), nights=1, nightly=BAR, counted=False)
    resp = api.put(f"/v1/properties/{p1.id}/reservations/{routed}/company-billing",
                   {"company_profile_id": company, "company_payment_method_id": bill})
    assert resp.status_code == 200, resp.text
    stays.append(Stay(routed, str(p1.id), today + timedelta(days=3), 1, BAR))
    assert api.post(f"/v1/properties/{p2.id}/reservations/{there}/check-in",
                    {}).status_code == 200

    # the reservation says whose it is, and so do its events
    for stay in stays:
        got = api.get(f"/v1/properties/{stay.property_id}/reservations/{stay.id}").json
        assert got["company_profile_id"] == company, got
    [created] = [e for e in outbox_rows(ctx) if e.type == "hotel:pms:reservation:created"
                 and e.data["id"] == own]
    assert created.data["company_profile_id"] == company

    # the credit manager's view: the account at env level, the production by property, month
    account = api.get(f"/v1/companies/{company}/receivable", token=manager).json
    assert account["exposure"]["future_stays"] == "300.00"  # the billed 2 nights, the routed 1
    start, end = today, today + timedelta(days=40)
    prod = f"/v1/companies/{company}/production"
    resp = api.get(prod, params={"from_date": start.isoformat(), "to_date": end.isoformat()},
                   token=manager)
    assert resp.status_code == 200, resp.text
    want = expected(stays, start, end)
    assert reported(resp.json) == want
    assert len({m for _p, m in want}) == 2 and len({p for p, _m in want}) == 2  # not vacuous
    assert resp.json["sums"] == [{"currency": "EUR",
                                  "room_nights": sum(v[0] for v in want.values()),
                                  "room_revenue": f"{sum(v[1] for v in want.values()):.2f}"}]
    # a range that cuts a stay counts only its nights inside; a property narrows it
    one = {"from_date": month_end.isoformat(), "to_date": month_end.isoformat()}
    assert reported(api.get(prod, params=one, token=manager).json) == expected(
        stays, month_end, month_end)
    narrowed = api.get(prod, params={"from_date": start.isoformat(), "to_date": end.isoformat(),
                                     "property_id": str(p2.id)}, token=manager).json
    assert reported(narrowed) == expected(stays, start, end, str(p2.id)) != {}
    assert_problem(api.get(prod, params={"from_date": end.isoformat(),
                                         "to_date": start.isoformat()}, token=manager), 422)

    # the company's ADMIN: every booking of the company at the property, page by page
    mine = f"{co1}/bookings"
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get(mine, params=params, token=token["admin"])
        assert page.status_code == 200, page.text
        seen += [b["id"] for b in page.json["data"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break
    assert seen == [own, billed, cancelled, routed]
    only = api.get(mine, params={"status": "CANCELLED"}, token=token["admin"]).json["data"]
    assert [b["id"] for b in only] == [cancelled]
    row = next(b for b in api.get(mine, token=token["admin"]).json["data"] if b["id"] == billed)
    assert (row["guest_profile_id"], row["billed_to_company"]) == (people["carl"], True)
    assert "total_amount" not in row and "nightly_prices" not in row
    # the booker sees them too; a traveler only its own stays; a stranger nothing
    assert [b["id"] for b in api.get(mine, token=token["booker"]).json["data"]] == seen
    assert [b["id"] for b in api.get(mine, token=token["ann"]).json["data"]] == [own]
    assert_problem(api.get(mine, token=token["stranger"]), 404)
    # the ADMIN reads neither the production nor the chain's receivable: staff routes
    assert_problem(api.get(prod, params=one, token=token["admin"]), 403, "guest_not_allowed")
    assert_problem(api.get(f"/v1/companies/{company}/receivable", token=token["admin"]), 403)
