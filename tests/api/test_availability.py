"""Availability searches over HTTP (both backends): offers, reasons, corporate rules, bad input."""

from __future__ import annotations

import uuid

import pytest

from pms.db.uow import unit_of_work
from pms.domain.stay import stay_nights
from pms.services.inventory.inventory import take_rooms
from tests.helpers import assert_problem, counts

pytestmark = pytest.mark.usefixtures("database")

ARR, DEP = "2030-03-01", "2030-03-04"


@pytest.fixture
def hotel(api):
    prop = api.post("/v1/properties", {"propertyCode": "AV1", "timezone": "Europe/Berlin",
                                       "currencyCode": "EUR",
                                       # its stays are in 2030: the longest horizon
                                       "bookingHorizonDays": 3660}).json
    base = f"/v1/properties/{prop['id']}"
    rt = api.post(base + "/room-types", {"code": "DBL", "name": "Double", "max_occupancy": 2}).json
    for number in ("101", "102"):
        api.post(base + "/rooms", {"room_number": number, "room_type_id": rt["id"]})
    bar = api.post(base + "/rate-plans", {"code": "BAR", "name": "Best"}).json
    corp = api.post(base + "/rate-plans", {"code": "CORP", "name": "Corp", "negotiated": True}).json
    for plan, amount in ((bar, "100.00"), (corp, "80.00")):
        api.put(f"{base}/rate-plans/{plan['id']}/rates", {"rates": [
            {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-12-31",
             "amount": amount}]})
    return {"prop": prop, "base": base, "rt": rt, "bar": bar, "corp": corp}


def _search(api, hotel, path="/availability", **over):
    body = {"arrival_date": ARR, "departure_date": DEP, "adults": 2}
    body.update(over)
    return api.post(hotel["base"] + path, body)


def _offer(resp, code):
    assert resp.status_code == 200, resp.text
    offers = resp.json["room_types"][0]["offers"]
    return next(o for o in offers if o["rate_plan_code"] == code)


def test_search_offers_nightly_prices_and_totals(api, hotel):
    resp = _search(api, hotel)
    body = resp.json
    assert body["nights"] == 3 and body["room_types"][0]["available"] == 2
    offer = _offer(resp, "BAR")
    assert offer["bookable"] is True and offer["reasons"] == []
    assert [n["amount"] for n in offer["nights"]] == ["100.00"] * 3
    assert offer["total"] == "300.00" and offer["currency"] == "EUR" and offer["available"] == 2


def test_search_writes_nothing(api, ctx, hotel):
    before = counts(ctx)
    _search(api, hotel)
    assert counts(ctx) == before


def test_public_search_withholds_negotiated_plans(api, hotel):
    codes = [o["rate_plan_code"] for o in _search(api, hotel).json["room_types"][0]["offers"]]
    assert codes == ["BAR"]


def test_sold_out_nights_are_reasons_and_available_drops(api, ctx, hotel):
    from datetime import date

    with unit_of_work(ctx):
        take_rooms(uuid.UUID(hotel["prop"]["id"]), uuid.UUID(hotel["rt"]["id"]),
                   stay_nights(date(2030, 3, 2), date(2030, 3, 3)), count=2)
    resp = _search(api, hotel)
    assert resp.json["room_types"][0]["available"] == 0
    offer = _offer(resp, "BAR")
    assert offer["bookable"] is False
    assert [(r["code"], r["date"]) for r in offer["reasons"]] == [("sold_out", "2030-03-02")]


def test_sell_limit_lowers_availability(api, hotel):
    resp = api.put(hotel["base"] + "/inventory", {"room_type_id": hotel["rt"]["id"],
                                                  "from_date": ARR, "to_date": "2030-03-01",
                                                  "sell_limit": 1})
    assert resp.status_code == 200, resp.text
    assert _search(api, hotel).json["room_types"][0]["available"] == 1


@pytest.mark.parametrize("rule, reason, on", [
    ({"closed": True, "from_date": "2030-03-02", "to_date": "2030-03-02"}, "closed", "2030-03-02"),
    ({"closed_to_arrival": True, "from_date": ARR, "to_date": ARR}, "closed_to_arrival", ARR),
    ({"closed_to_departure": True, "from_date": DEP, "to_date": DEP}, "closed_to_departure", DEP),
    ({"min_los": 4, "from_date": ARR, "to_date": ARR}, "min_los", ARR),
    ({"max_los": 2, "from_date": ARR, "to_date": ARR}, "max_los", ARR),
])
def test_broken_restrictions_are_reasons(api, hotel, rule, reason, on):
    api.put(f"{hotel['base']}/rate-plans/{hotel['bar']['id']}/restrictions", rule)
    offer = _offer(_search(api, hotel), "BAR")
    assert offer["bookable"] is False
    assert [(r["code"], r["date"]) for r in offer["reasons"]] == [(reason, on)]


def test_min_los_only_counts_on_the_arrival_date(api, hotel):
    api.put(f"{hotel['base']}/rate-plans/{hotel['bar']['id']}/restrictions",
            {"min_los": 5, "from_date": "2030-03-02", "to_date": "2030-03-02"})
    assert _offer(_search(api, hotel), "BAR")["bookable"] is True


def test_missing_rate_is_a_reason(api, hotel):
    resp = _search(api, hotel, arrival_date="2030-12-30", departure_date="2031-01-02")
    offer = _offer(resp, "BAR")
    assert [(r["code"], r["date"]) for r in offer["reasons"]] == [("no_rate", "2031-01-01")]


def test_over_occupancy_is_a_reason(api, hotel):
    offer = _offer(_search(api, hotel, adults=2, children=1), "BAR")
    assert [r["code"] for r in offer["reasons"]] == ["over_occupancy"]


def test_include_unavailable_false_leaves_out_unbookable_offers(api, hotel):
    resp = _search(api, hotel, adults=3, include_unavailable=False)
    assert resp.json["room_types"] == []


def test_packages_are_priced_into_the_stay(api, hotel):
    base = hotel["base"]
    api.post(base + "/packages", {"code": "BRK", "name": "Breakfast", "price": "15.00",
                                  "calculation": "PER_PERSON_PER_NIGHT"})
    api.post(base + "/packages", {"code": "PARK", "name": "Parking", "price": "10.00",
                                  "calculation": "PER_STAY"})
    plan = api.post(base + "/rate-plans", {"code": "BB", "name": "Bed and breakfast",
                                           "package_codes": ["BRK", "PARK"]}).json
    api.put(f"{base}/rate-plans/{plan['id']}/rates", {"rates": [
        {"room_type_id": hotel["rt"]["id"], "from_date": ARR, "to_date": "2030-03-03",
         "amount": "100"}]})
    offer = _offer(_search(api, hotel), "BB")
    assert offer["room_total"] == "300.00"
    assert offer["packages_total"] == "100.00"   # 15 x 2 persons x 3 nights + 10
    assert offer["total"] == "400.00"


def test_promo_code_discounts_offers(api, hotel):
    api.post(hotel["base"] + "/promo-codes", {"code": "TEN", "discount_type": "PERCENT",
                                              "discount_value": "10"})
    offer = _offer(_search(api, hotel, promo_code="ten"), "BAR")
    assert offer["discount_total"] == "30.00" and offer["total"] == "270.00"


def _company(api, hotel, plan_ids):
    return api.post(hotel["base"] + "/profiles", {
        "kind": "COMPANY", "company_name": f"ACME {uuid.uuid4().hex[:6]}",
        "preferences": {"negotiated_rate_plan_ids": plan_ids}}).json


def test_corporate_search_offers_only_the_companys_negotiated_plans(api, hotel):
    company = _company(api, hotel, [hotel["corp"]["id"]])
    resp = _search(api, hotel, "/corporate-availability", company_profile_id=company["id"])
    offers = resp.json["room_types"][0]["offers"]
    assert [o["rate_plan_code"] for o in offers] == ["CORP"]
    assert offers[0]["total"] == "240.00" and offers[0]["negotiated"] is True
    assert resp.json["company_profile_id"] == company["id"]


def test_corporate_search_without_negotiated_plans_has_no_fallback(api, hotel):
    company = _company(api, hotel, [])
    resp = _search(api, hotel, "/corporate-availability", company_profile_id=company["id"])
    assert resp.status_code == 200
    assert all(rt["offers"] == [] for rt in resp.json["room_types"])


def test_corporate_search_ignores_public_plans_listed_for_the_company(api, hotel, ctx):
    # a company can no longer list a public plan (422 at the profile) ...
    refused = api.post(hotel["base"] + "/profiles", {
        "kind": "COMPANY", "company_name": f"ACME {uuid.uuid4().hex[:6]}",
        "preferences": {"negotiated_rate_plan_ids": [hotel["bar"]["id"]]}})
    assert_problem(refused, 422)
    # ... and one whose stored list names one anyway (older rows) is still not offered it
    from pms.db.uow import unit_of_work
    from pms.models import Profile

    company = _company(api, hotel, [hotel["corp"]["id"]])
    with unit_of_work(ctx):
        Profile.update(preferences={"negotiated_rate_plan_ids": [hotel["bar"]["id"]]}).where(
            Profile.id == company["id"]).execute()
    resp = _search(api, hotel, "/corporate-availability", company_profile_id=company["id"])
    assert resp.json["room_types"][0]["offers"] == []


def test_rate_links_decide_what_the_corporate_search_offers(api, hotel):
    """SPEC: a rate plan can be negotiated and linked to companies; the links are the profile's
    negotiated_rate_plan_ids, replaced by PUT .../rate-links (staff), read by the search."""
    from pms.context import Ctx
    from pms.db.uow import read_scope
    from pms.models import AuditEntry, OutboxEvent

    company = _company(api, hotel, [])
    links = f"{hotel['base']}/companies/{company['id']}/rate-links"

    def offered():
        resp = _search(api, hotel, "/corporate-availability", company_profile_id=company["id"])
        return [o["rate_plan_code"] for o in resp.json["room_types"][0]["offers"]]

    assert api.get(links).json["rate_plan_ids"] == [] and offered() == []
    linked = api.put(links, {"rate_plan_ids": [hotel["corp"]["id"]]})
    assert linked.status_code == 200, linked.text
    assert [p["code"] for p in linked.json["rate_plans"]] == ["CORP"]
    assert api.get(links).json == linked.json
    assert offered() == ["CORP"]
    assert api.put(links, {"rate_plan_ids": [hotel["corp"]["id"]]}).json == linked.json
    refused = api.put(links, {"rate_plan_ids": [hotel["bar"]["id"]]})  # a public plan
    assert_problem(refused, 422)
    assert [e["field"] for e in refused.json["errors"]] == ["rate_plan_ids"]
    assert_problem(api.put(links, {"rate_plan_ids": [str(uuid.uuid4())]}), 422)
    assert_problem(api.put(links, {"rate_plan_ids": "x"}), 422)
    assert api.put(links, {"rate_plan_ids": []}).json["rate_plan_ids"] == []
    assert offered() == []
    with read_scope(Ctx(env_id=api.env_id)):  # link and unlink: one event and audit row each
        events = [e.type for e in OutboxEvent.select().where(
            OutboxEvent.subject == company["id"]).order_by(OutboxEvent.aggregate_version)]
        audits = [a.action for a in AuditEntry.select().where(
            AuditEntry.target_id == company["id"]).order_by(AuditEntry.created_at)]
    assert events.count("hotel:pms:company:rate_links_updated") == 2, events
    assert audits.count("company.rate_links_updated") == 2, audits


def test_a_company_never_links_itself_to_a_rate(api, hotel):
    from pms.devkeys import mint_token

    company = _company(api, hotel, [])
    links = f"{hotel['base']}/companies/{company['id']}/rate-links"
    own = mint_token(api.settings, env_id=api.env_id, client_kind="user",
                     holder_id=company["id"])
    assert_problem(api.put(links, {"rate_plan_ids": [hotel["corp"]["id"]]}, token=own), 403)
    assert_problem(api.get(links, token=own), 403)
    assert api.get(links).json["rate_plan_ids"] == []


def test_corporate_search_with_unknown_company_is_422(api, hotel):
    resp = _search(api, hotel, "/corporate-availability", company_profile_id=str(uuid.uuid4()))
    assert_problem(resp, 422)


def test_corporate_search_without_company_is_the_public_search(api, hotel):
    resp = _search(api, hotel, "/corporate-availability")
    assert [o["rate_plan_code"] for o in resp.json["room_types"][0]["offers"]] == ["BAR"]


def test_env_wide_search_covers_every_property(api, hotel):
    other = api.post("/v1/properties", {"propertyCode": "AV2", "timezone": "America/New_York",
                                        "currencyCode": "USD"}).json
    resp = api.get("/v1/availability", params={"arrival_date": ARR, "departure_date": DEP})
    assert resp.status_code == 200, resp.text
    assert [p["property_code"] for p in resp.json["data"]] == ["AV1", "AV2"]
    av1 = resp.json["data"][0]
    assert av1["room_types"][0]["offers"][0]["total"] == "300.00"
    one = api.get("/v1/availability", params={"arrival_date": ARR, "departure_date": DEP,
                                              "property_id": other["id"]})
    assert [p["property_code"] for p in one.json["data"]] == ["AV2"]


def test_env_wide_search_sees_only_the_callers_env(api, hotel):
    other = api.for_env(uuid.uuid4())
    resp = other.get("/v1/availability", params={"arrival_date": ARR, "departure_date": DEP})
    assert resp.status_code == 200 and resp.json["data"] == []


@pytest.mark.parametrize("over", [
    {"departure_date": ARR},                                 # zero nights
    {"arrival_date": "2030-03-05"},                          # arrival after departure
    {"arrival_date": "2001-01-01", "departure_date": "2001-01-02"},  # past arrival
    {"arrival_date": "2030-02-30"},                          # malformed date
    {"arrival_date": 20300301},                              # wrong type
    {"departure_date": "2030-09-01"},                        # over 90 nights
    {"adults": 0},
    {"children": -1},
    {"room_type_id": str(uuid.uuid4())},
    {"env_id": str(uuid.uuid4())},
])
def test_bad_search_input_is_422(api, hotel, over):
    assert_problem(_search(api, hotel, **over), 422)


def test_room_type_of_another_property_is_422(api, hotel):
    other = api.post("/v1/properties", {"propertyCode": "AV3", "timezone": "UTC",
                                        "currencyCode": "EUR"}).json
    rt = api.post(f"/v1/properties/{other['id']}/room-types", {"code": "X", "name": "X"}).json
    assert_problem(_search(api, hotel, room_type_id=rt["id"]), 422)


def test_unknown_property_is_404(api):
    resp = api.post(f"/v1/properties/{uuid.uuid4()}/availability",
                    {"arrival_date": ARR, "departure_date": DEP})
    assert_problem(resp, 404)


def test_env_wide_bad_query_is_422(api):
    assert_problem(api.get("/v1/availability", params={"arrival_date": "x",
                                                       "departure_date": DEP}), 422)
    assert_problem(api.get("/v1/availability", params={"departure_date": DEP}), 422)


def test_search_needs_inventory_read(api, hotel, settings):
    from pms.devkeys import mint_token

    token = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:rates:read"])
    resp = api.post(hotel["base"] + "/availability",
                    {"arrival_date": ARR, "departure_date": DEP}, token=token)
    assert_problem(resp, 403)


def test_rate_plan_filter_limits_offers(api, hotel):
    resp = _search(api, hotel, rate_plan_ids=[hotel["bar"]["id"]])
    assert [o["rate_plan_code"] for o in resp.json["room_types"][0]["offers"]] == ["BAR"]


def test_unknown_rate_plan_in_the_filter_is_422(api, hotel):
    body = assert_problem(_search(api, hotel, rate_plan_ids=[str(uuid.uuid4())]), 422)
    assert body["errors"][0]["field"] == "rate_plan_ids"


def test_negotiated_plan_in_the_public_filter_is_withheld_not_an_error(api, hotel):
    resp = _search(api, hotel, rate_plan_ids=[hotel["corp"]["id"]])
    assert resp.status_code == 200 and resp.json["room_types"][0]["offers"] == []


def test_a_booking_lowers_availability_and_a_cancel_gives_it_back(api, hotel):
    booked = api.post(hotel["base"] + "/reservations", {
        "room_type_id": hotel["rt"]["id"], "rate_plan_id": hotel["bar"]["id"],
        "arrival_date": "2030-03-02", "departure_date": DEP, "guest": {"last_name": "Hopper"}})
    assert booked.status_code == 201, booked.text
    assert _search(api, hotel).json["room_types"][0]["available"] == 1
    cancelled = api.post(f"{hotel['base']}/reservations/{booked.json['id']}/cancel", {})
    assert cancelled.status_code == 200, cancelled.text
    assert _search(api, hotel).json["room_types"][0]["available"] == 2
