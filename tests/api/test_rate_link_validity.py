"""A negotiated rate link's validity dates (OPERA's begin and end dates per property), through
the HTTP API on SQLite and PostgreSQL: a booking for the company on the plan is accepted only
when every night of the stay falls within them (422 rate_link_not_valid_for_stay otherwise),
the corporate search offers the plan only for such stays, and the plain list of ids still
works (a link valid on every date)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.factories import load_rates, make_booking_hotel, make_rate_plan, reservation_body
from tests.helpers import assert_problem, random_ref


def _setup(api: Any, ctx: Any) -> tuple[Any, Any, str, str]:
    hotel = make_booking_hotel(ctx)
    plan = make_rate_plan(ctx, hotel.prop.id, negotiated=True, code=random_ref("NG"))
    load_rates(ctx, hotel.prop.id, plan.id, hotel.room_type.id, amount="80.00")
    resp = api.post(f"/v1/properties/{hotel.prop.id}/profiles",
                    {"kind": "COMPANY", "company_name": random_ref("Co")})
    assert resp.status_code == 201, resp.text
    links = f"/v1/properties/{hotel.prop.id}/companies/{resp.json['id']}/rate-links"
    return hotel, plan, resp.json["id"], links


def _book(api: Any, hotel: Any, plan: Any, company: str, arrival: Any, nights: int) -> Any:
    return api.post(f"/v1/properties/{hotel.prop.id}/reservations", reservation_body(
        hotel, rate_plan_id=str(plan.id), company_profile_id=company,
        arrival_date=arrival.isoformat(),
        departure_date=(arrival + timedelta(days=nights)).isoformat()))


def _offered(api: Any, hotel: Any, company: str, arrival: Any, nights: int) -> list[str]:
    resp = api.post(f"/v1/properties/{hotel.prop.id}/corporate-availability", {
        "arrival_date": arrival.isoformat(),
        "departure_date": (arrival + timedelta(days=nights)).isoformat(), "adults": 2,
        "company_profile_id": company})
    assert resp.status_code == 200, resp.text
    return [o["rate_plan_id"] for rt in resp.json["room_types"] for o in rt["offers"]]


def test_a_booking_outside_the_links_validity_is_refused_and_inside_it_is_accepted(api, ctx):
    hotel, plan, company, links = _setup(api, ctx)
    start, end = hotel.today + timedelta(days=5), hotel.today + timedelta(days=9)
    resp = api.put(links, {"links": [{"rate_plan_id": str(plan.id),
                                      "valid_from": start.isoformat(),
                                      "valid_to": end.isoformat()}]})
    assert resp.status_code == 200, resp.text
    assert resp.json["rate_plan_ids"] == [str(plan.id)]
    linked = resp.json["rate_plans"][0]
    assert (linked["valid_from"], linked["valid_to"]) == (start.isoformat(), end.isoformat())
    assert api.get(links).json == resp.json
    # before the window, across its start, across its end (the last night is end + 1),
    # after it: refused with the link's dates
    for arrival, nights in ((hotel.today + timedelta(days=1), 2), (start - timedelta(days=1), 2),
                            (end, 2), (end + timedelta(days=1), 1)):
        refused = assert_problem(_book(api, hotel, plan, company, arrival, nights), 422,
                                 "rate_link_not_valid_for_stay")
        assert (refused["valid_from"], refused["valid_to"]) == (start.isoformat(),
                                                                end.isoformat())
        assert _offered(api, hotel, company, arrival, nights) == []
    # inside: the first night on valid_from, the last on valid_to (inclusive)
    assert _offered(api, hotel, company, start, 5) == [str(plan.id)]
    booked = _book(api, hotel, plan, company, start, 5)
    assert booked.status_code == 201, booked.text
    # the control: the same link without dates admits the stay the window refused
    assert api.put(links, {"rate_plan_ids": [str(plan.id)]}).json["rate_plans"][0][
        "valid_from"] is None
    early = hotel.today + timedelta(days=1)
    assert _offered(api, hotel, company, early, 2) == [str(plan.id)]
    assert _book(api, hotel, plan, company, early, 2).status_code == 201


def test_a_link_open_on_one_side_and_the_shapes_the_body_refuses(api, ctx):
    hotel, plan, company, links = _setup(api, ctx)
    start = hotel.today + timedelta(days=3)
    assert api.put(links, {"links": [{"rate_plan_id": str(plan.id),
                                      "valid_from": start.isoformat()}]}).status_code == 200
    assert_problem(_book(api, hotel, plan, company, start - timedelta(days=1), 2), 422,
                   "rate_link_not_valid_for_stay")
    assert _book(api, hotel, plan, company, start + timedelta(days=30), 3).status_code == 201
    # valid_from after valid_to, a plan twice, both shapes, neither: 422, links unchanged
    bad = assert_problem(api.put(links, {"links": [{
        "rate_plan_id": str(plan.id), "valid_from": start.isoformat(),
        "valid_to": (start - timedelta(days=1)).isoformat()}]}), 422, "invalid_rate_link")
    assert [e["field"] for e in bad["errors"]] == ["links[0].valid_to"]
    assert_problem(api.put(links, {"links": [{"rate_plan_id": str(plan.id)}] * 2}), 422,
                   "invalid_rate_link")
    assert_problem(api.put(links, {"rate_plan_ids": [], "links": []}), 422)
    assert_problem(api.put(links, {}), 422)
    assert_problem(api.put(links, {"links": [{"rate_plan_id": str(plan.id),
                                              "valid_to": "2030-02-30"}]}), 422)
    assert api.get(links).json["rate_plans"][0]["valid_from"] == start.isoformat()
    # the same links again change nothing; one link per property is replaced as a whole
    again = api.put(links, {"links": [{"rate_plan_id": str(plan.id),
                                       "valid_from": start.isoformat()}]})
    assert again.json == api.get(links).json
