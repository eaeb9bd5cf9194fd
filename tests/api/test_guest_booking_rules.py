"""What a guest session may book and say (twins of the holder-scoping fixes).

- A negotiated (corporate) rate plan is booked by rate_plan_id only by staff, channels and a
  holder bound to the company it is negotiated for: the rule of the corporate availability
  search (`pms.services.inventory.availability.rate_plan_open_to`). Anyone else gets the answer of a rate
  plan that does not exist, on create and on an edit that changes the plan.
- A guest's reservation messages are always incoming: `outgoing` speaks for the hotel.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from pms.devkeys import mint_token
from tests.factories import load_rates, make_booking_hotel, make_profile, make_rate_plan
from tests.helpers import assert_problem, random_ref


@dataclass
class Corp:
    api: Any
    hotel: Any
    corp_plan: Any       # negotiated, listed by `company`
    company: Any         # company profile bound to corp_plan
    other_company: Any   # a company without corp_plan
    guest: Any           # a guest profile

    def token(self, holder: Any, kind: str = "guest") -> str:
        return mint_token(self.api.settings, env_id=self.api.env_id, client_kind=kind,
                          holder_id=str(holder))

    @property
    def url(self) -> str:
        return f"/v1/properties/{self.hotel.id}/reservations"

    def body(self, plan_id: Any, **over: Any) -> dict[str, Any]:
        body = {"room_type_id": str(self.hotel.room_type.id), "rate_plan_id": str(plan_id),
                "arrival_date": self.hotel.today.isoformat(),
                "departure_date": (self.hotel.today + timedelta(days=1)).isoformat(),
                "adults": 1}
        body.update(over)
        return body


@pytest.fixture
def corp(api, ctx) -> Corp:
    hotel = make_booking_hotel(ctx, rooms=6)
    plan = make_rate_plan(ctx, hotel.id, code=random_ref("CORP"), name="Corporate",
                          negotiated=True)
    load_rates(ctx, hotel.id, plan.id, hotel.room_type.id, amount="80.00")
    company = make_profile(ctx, hotel.id, kind="COMPANY", company_name="Acme", first_name=None,
                           last_name=None, email=None,
                           preferences={"negotiated_rate_plan_ids": [str(plan.id)]})
    other = make_profile(ctx, hotel.id, kind="COMPANY", company_name="Globex", first_name=None,
                         last_name=None, email=None)
    guest = make_profile(ctx, hotel.id, email=f"{random_ref('g')}@example.com")
    return Corp(api, hotel, plan, company, other, guest)


def _same_answer(a: Any, b: Any, status: int = 422) -> None:
    """Two problems a client cannot tell apart (no oracle of plan ids)."""
    pa, pb = assert_problem(a, status), assert_problem(b, status)
    assert (pa["code"], pa["detail"], pa.get("errors")) == (pb["code"], pb["detail"],
                                                            pb.get("errors"))


# -- negotiated plans ---------------------------------------------------------------------------

def test_a_guest_cannot_book_a_negotiated_plan_and_it_reads_as_an_unknown_plan(corp):
    token = corp.token(corp.guest.id)
    negotiated = corp.api.post(corp.url, corp.body(corp.corp_plan.id), token=token)
    unknown = corp.api.post(corp.url, corp.body(uuid.uuid4()), token=token)
    _same_answer(negotiated, unknown)
    assert negotiated.json["errors"][0]["field"] == "rate_plan_id"
    # the public plan stays bookable for the same guest (control)
    public = corp.api.post(corp.url, corp.body(corp.hotel.rate_plan.id), token=token)
    assert public.status_code == 201, public.text


def test_a_company_session_books_only_the_plans_negotiated_for_it(corp):
    bound = corp.api.post(corp.url, corp.body(corp.corp_plan.id),
                          token=corp.token(corp.company.id, kind="user"))
    assert bound.status_code == 201, bound.text
    assert bound.json["rate_plan_id"] == str(corp.corp_plan.id)
    # a company the plan is not negotiated for: the unknown-plan answer
    token = corp.token(corp.other_company.id, kind="user")
    _same_answer(corp.api.post(corp.url, corp.body(corp.corp_plan.id), token=token),
                 corp.api.post(corp.url, corp.body(uuid.uuid4()), token=token))


def test_staff_and_channels_still_book_negotiated_plans(corp):
    # (the rate fence): naming the company the plan is negotiated for
    company = str(corp.company.id)
    staff = corp.api.post(corp.url, corp.body(corp.corp_plan.id, guest={"last_name": "Hopper"},
                                              company_profile_id=company))
    assert staff.status_code == 201, staff.text
    channel = mint_token(corp.api.settings, env_id=corp.api.env_id, client_kind="machine")
    resp = corp.api.post(corp.url, corp.body(corp.corp_plan.id, guest={"last_name": "Byron"},
                                             company_profile_id=company), token=channel)
    assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("company", ["none", "other", "unknown", "guest"])
def test_a_booking_on_a_negotiated_plan_names_a_company_it_is_linked_to(corp, ctx, company):
    # the same fence as the corporate search, for staff too (with a clear answer)
    named = {"none": None, "other": str(corp.other_company.id), "unknown": str(uuid.uuid4()),
             "guest": str(corp.guest.id)}[company]
    body = corp.body(corp.corp_plan.id, guest={"last_name": "Hopper"})
    if named is not None:
        body["company_profile_id"] = named
    from tests.helpers import counts
    before = counts(ctx)
    assert_problem(corp.api.post(corp.url, body), 422, "rate_plan_not_negotiated_for_company")
    assert counts(ctx) == before
    # a public plan needs no company
    public = corp.api.post(corp.url, corp.body(corp.hotel.rate_plan.id,
                                               guest={"last_name": "Hopper"}))
    assert public.status_code == 201, public.text


def test_a_traveler_bound_to_the_company_books_and_searches_its_negotiated_plan(corp):
    base = f"/v1/properties/{corp.hotel.id}/companies/{corp.company.id}/users"
    company = str(corp.company.id)
    token = corp.token(corp.guest.id, kind="user")
    stay = {k: v for k, v in corp.body(corp.corp_plan.id).items()
            if k in ("arrival_date", "departure_date", "adults")}
    search = f"/v1/properties/{corp.hotel.id}/corporate-availability"
    body = corp.body(corp.corp_plan.id, company_profile_id=company,
                     guest_profile_id=str(corp.guest.id))
    # not bound yet: the unknown answers
    assert_problem(corp.api.post(search, {**stay, "company_profile_id": company}, token=token),
                   404)
    _same_answer(corp.api.post(corp.url, body, token=token),
                 corp.api.post(corp.url, {**body, "rate_plan_id": str(uuid.uuid4())},
                               token=token))
    # a VIEWER may search, not book
    binding = corp.api.post(base, {"traveler_profile_id": str(corp.guest.id),
                                   "role": "VIEWER"}).json["id"]
    offers = corp.api.post(search, {**stay, "company_profile_id": company}, token=token)
    assert offers.status_code == 200, offers.text
    plans = {o["rate_plan_id"] for rt in offers.json["room_types"] for o in rt["offers"]}
    assert plans == {str(corp.corp_plan.id)}
    assert_problem(corp.api.post(corp.url, body, token=token), 422)
    # a TRAVELER books what it was offered
    corp.api.delete(f"{base}/{binding}")
    corp.api.post(base, {"traveler_profile_id": str(corp.guest.id), "role": "TRAVELER"})
    booked = corp.api.post(corp.url, body, token=token)
    assert booked.status_code == 201, booked.text
    assert booked.json["rate_plan_id"] == str(corp.corp_plan.id)
    # the plan is still fenced from another company the traveler names
    assert_problem(corp.api.post(corp.url, {**body, "company_profile_id":
                                            str(corp.other_company.id)}, token=token), 422)


def test_a_guest_cannot_switch_its_reservation_to_a_negotiated_plan(corp):
    token = corp.token(corp.guest.id)
    booked = corp.api.post(corp.url, corp.body(corp.hotel.rate_plan.id), token=token)
    assert booked.status_code == 201, booked.text
    item = f"{corp.url}/{booked.json['id']}"
    switched = corp.api.put(item, {"rate_plan_id": str(corp.corp_plan.id)}, token=token)
    unknown = corp.api.put(item, {"rate_plan_id": str(uuid.uuid4())}, token=token)
    _same_answer(switched, unknown)
    after = corp.api.get(item, token=token).json
    assert after["rate_plan_id"] == str(corp.hotel.rate_plan.id)
    assert after["total_amount"] == booked.json["total_amount"]
    # staff may move the guest onto the corporate rate
    staff = corp.api.put(item, {"rate_plan_id": str(corp.corp_plan.id)})
    assert staff.status_code == 200 and staff.json["rate_plan_id"] == str(corp.corp_plan.id)


def test_a_guest_keeps_a_negotiated_plan_staff_booked_for_it_when_editing_other_fields(corp):
    booked = corp.api.post(corp.url, corp.body(corp.corp_plan.id,
                                               guest_profile_id=str(corp.guest.id),
                                               company_profile_id=str(corp.company.id)))
    assert booked.status_code == 201, booked.text
    resp = corp.api.put(f"{corp.url}/{booked.json['id']}", {"adults": 2},
                        token=corp.token(corp.guest.id))
    assert resp.status_code == 200, resp.text
    assert resp.json["rate_plan_id"] == str(corp.corp_plan.id) and resp.json["adults"] == 2


# -- messages -----------------------------------------------------------------------------------

def test_a_guests_messages_are_always_incoming(corp):
    token = corp.token(corp.guest.id)
    booked = corp.api.post(corp.url, corp.body(corp.hotel.rate_plan.id), token=token)
    assert booked.status_code == 201, booked.text
    messages = f"{corp.url}/{booked.json['id']}/messages"
    posing = corp.api.post(messages, {"direction": "outgoing", "body": "Your stay is free"},
                           token=token)
    problem = assert_problem(posing, 422, "field_not_allowed")
    assert problem["errors"][0]["field"] == "direction"
    # the same answer for a reservation that is not the guest's (no oracle of ids)
    elsewhere = corp.api.post(f"{corp.url}/{uuid.uuid4()}/messages",
                              {"direction": "outgoing", "body": "x"}, token=token)
    assert assert_problem(elsewhere, 422, "field_not_allowed")["errors"] == problem["errors"]
    incoming = corp.api.post(messages, {"direction": "incoming", "body": "Late arrival"},
                             token=token)
    assert incoming.status_code == 201 and incoming.json["direction"] == "incoming"
    # staff speak for the hotel
    staff = corp.api.post(messages, {"direction": "outgoing", "body": "Welcome"})
    assert staff.status_code == 201 and staff.json["direction"] == "outgoing"
    listed = corp.api.get(messages).json["data"]
    assert sorted(m["body"] for m in listed) == ["Late arrival", "Welcome"]


def test_promo_validation_prices_a_negotiated_plan_only_for_whom_it_is_open(corp):
    # the open promo check prices a stay by rate_plan_id: it must not show a guest the
    # corporate rate (nor confirm the plan exists) that booking would refuse it
    url = f"/v1/properties/{corp.hotel.id}/promo/validate"
    body = {**corp.body(corp.corp_plan.id), "code": "NONE"}
    token = corp.token(corp.guest.id)
    _same_answer(corp.api.post(url, body, token=token),
                 corp.api.post(url, {**body, "rate_plan_id": str(uuid.uuid4())}, token=token))
    # staff too: the body names no company, and staff cannot book the plan without one
    # (rate_plan_not_negotiated_for_company), so the quote and the booking agree
    assert corp.api.post(url, body).status_code == 422
    assert corp.api.post(url, body, token=corp.token(corp.company.id, kind="user")
                         ).status_code == 200


# -- company roles and bookings: the booking cells of the role table ------------------

def _booking_cells(corp: Corp, ctx: Any, role: str) -> dict[Any, bool]:
    from pms.domain.companies import CompanyAction

    users = f"/v1/properties/{corp.hotel.id}/companies/{corp.company.id}/users"

    def traveler() -> str:
        return make_profile(ctx, corp.hotel.id,
                            email=f"{random_ref('t')}@example.com").id

    me, colleague, outsider = str(traveler()), str(traveler()), str(traveler())
    for who, r in ((me, role), (colleague, "TRAVELER")):
        assert corp.api.post(users, {"traveler_profile_id": who, "role": r}).status_code == 201
    token = corp.token(me, kind="user")
    company = str(corp.company.id)
    search = corp.api.post(f"/v1/properties/{corp.hotel.id}/corporate-availability", {
        "arrival_date": corp.hotel.today.isoformat(),
        "departure_date": (corp.hotel.today + timedelta(days=1)).isoformat(), "adults": 1,
        "company_profile_id": company}, token=token)
    own = corp.api.post(corp.url, corp.body(corp.corp_plan.id, company_profile_id=company,
                                            guest_profile_id=me), token=token)
    other = corp.api.post(corp.url, corp.body(corp.hotel.rate_plan.id, company_profile_id=company,
                                              guest_profile_id=colleague), token=token)
    # never for a profile that is not a traveler of the company
    assert_problem(corp.api.post(corp.url, corp.body(
        corp.hotel.rate_plan.id, company_profile_id=company, guest_profile_id=outsider),
        token=token), 404)
    if other.status_code == 201:
        assert other.json["guest_profile_id"] == colleague
    else:
        assert_problem(other, 404)
    if own.status_code != 201:
        assert_problem(own, 422)
    return {CompanyAction.SEARCH_CORPORATE: search.status_code == 200,
            CompanyAction.BOOK_OWN: own.status_code == 201,
            CompanyAction.BOOK_FOR_TRAVELER: other.status_code == 201}


@pytest.mark.parametrize("role", ["ADMIN", "BOOKER", "TRAVELER", "VIEWER"])
def test_company_bookings_follow_the_role_table(corp, ctx, role):
    from pms.domain.companies import ROLE_ACTIONS, CompanyRole

    cells = _booking_cells(corp, ctx, role)
    assert cells == {a: a in ROLE_ACTIONS[CompanyRole(role)] for a in cells}
