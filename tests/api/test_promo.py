"""Promo codes over HTTP: CRUD, and validation that prices a code without committing."""

from __future__ import annotations

import pytest

from tests.helpers import assert_problem, counts

pytestmark = pytest.mark.usefixtures("database")


@pytest.fixture
def hotel(api):
    prop = api.post("/v1/properties", {"propertyCode": "PROMO", "timezone": "Europe/Berlin",
                                       "currencyCode": "EUR"}).json
    base = f"/v1/properties/{prop['id']}"
    rt = api.post(base + "/room-types", {"code": "DBL", "name": "Double"}).json
    api.post(base + "/rooms", {"room_number": "101", "room_type_id": rt["id"]})
    rp = api.post(base + "/rate-plans", {"code": "BAR", "name": "Best"}).json
    api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": [
        {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-12-31",
         "amount": "100.00"}]})
    return {"base": base, "rt": rt, "rp": rp}


def _stay(hotel, code, **over):
    body = {"code": code, "arrival_date": "2030-03-01", "departure_date": "2030-03-04",
            "room_type_id": hotel["rt"]["id"], "rate_plan_id": hotel["rp"]["id"], "adults": 2}
    body.update(over)
    return body


def test_percent_promo_prices_the_stay_without_committing(api, ctx, hotel):
    created = api.post(hotel["base"] + "/promo-codes",
                       {"code": "spring10", "discount_type": "PERCENT", "discount_value": "10"})
    assert created.status_code == 201, created.text
    assert created.json["code"] == "SPRING10"
    before = counts(ctx)
    resp = api.post(hotel["base"] + "/promo/validate", _stay(hotel, "Spring10"))
    assert resp.status_code == 200, resp.text
    body = resp.json
    assert body["valid"] is True and body["bookable"] is True
    assert body["room_total"] == "300.00"
    assert body["discount_total"] == "30.00"
    assert body["total"] == "270.00"
    assert body["total_without_promo"] == "300.00"
    assert counts(ctx) == before


def test_fixed_promo_never_exceeds_the_room_total(api, hotel):
    api.post(hotel["base"] + "/promo-codes",
             {"code": "BIG", "discount_type": "FIXED", "discount_value": "1000"})
    body = api.post(hotel["base"] + "/promo/validate", _stay(hotel, "BIG")).json
    assert body["discount_total"] == "300.00" and body["total"] == "0.00"


@pytest.mark.parametrize("promo, reason", [
    ({"valid_to": "2030-02-01"}, "promo_expired"),
    ({"valid_from": "2030-04-01"}, "promo_not_yet_valid"),
    ({"min_nights": 5}, "promo_min_nights"),
    ({"active": False}, "promo_invalid"),
])
def test_unusable_promo_says_why(api, hotel, promo, reason):
    api.post(hotel["base"] + "/promo-codes",
             {"code": "X1", "discount_type": "PERCENT", "discount_value": "10", **promo})
    body = api.post(hotel["base"] + "/promo/validate", _stay(hotel, "X1")).json
    assert body["valid"] is False
    assert reason in [r["code"] for r in body["reasons"]]
    assert body["discount_total"] == "0.00"


def test_unknown_promo_is_invalid_not_an_error(api, hotel):
    body = api.post(hotel["base"] + "/promo/validate", _stay(hotel, "NOPE")).json
    assert body["valid"] is False and body["reasons"][0]["code"] == "promo_invalid"


def test_promo_limited_to_other_rate_plans_does_not_apply(api, hotel):
    other = api.post(hotel["base"] + "/rate-plans", {"code": "OTH", "name": "Other"}).json
    api.post(hotel["base"] + "/promo-codes", {"code": "ONLY", "discount_type": "PERCENT",
                                              "discount_value": "5", "rate_plan_ids": [other["id"]]})
    body = api.post(hotel["base"] + "/promo/validate", _stay(hotel, "ONLY")).json
    assert [r["code"] for r in body["reasons"]] == ["promo_not_applicable"]


def test_validate_reports_stay_problems_too(api, hotel):
    api.post(hotel["base"] + "/promo-codes",
             {"code": "OK", "discount_type": "PERCENT", "discount_value": "10"})
    body = api.post(hotel["base"] + "/promo/validate",
                    _stay(hotel, "OK", arrival_date="2031-06-01", departure_date="2031-06-02")).json
    assert body["valid"] is True and body["bookable"] is False
    assert "no_rate" in [r["code"] for r in body["reasons"]]


@pytest.mark.parametrize("over", [
    {"departure_date": "2030-03-01"},            # zero nights
    {"departure_date": "2030-02-01"},            # departure before arrival
    {"arrival_date": "2030-13-01"},              # malformed date
    {"adults": 0},
    {"room_type_id": "00000000-0000-4000-8000-000000000001"},
    {"rate_plan_id": "00000000-0000-4000-8000-000000000001"},
    {"env_id": "00000000-0000-4000-8000-000000000001"},
])
def test_validate_bad_input_is_422(api, hotel, over):
    assert_problem(api.post(hotel["base"] + "/promo/validate", _stay(hotel, "OK", **over)), 422)


def test_promo_crud_and_duplicate_code(api, ctx, hotel):
    path = hotel["base"] + "/promo-codes"
    created = api.post(path, {"code": "SAVE", "discount_type": "FIXED", "discount_value": "20"}).json
    assert created["currency"] == "EUR" and created["discount_value"] == "20.00"
    assert_problem(api.post(path, {"code": "save", "discount_type": "PERCENT",
                                   "discount_value": "5"}), 409, "already_exists")
    changed = api.put(f"{path}/{created['id']}", {"discount_value": "25", "active": False})
    assert changed.status_code == 200 and changed.json["discount_value"] == "25.00"
    listed = api.get(path).json
    assert [p["code"] for p in listed["data"]] == ["SAVE"]
    assert api.delete(f"{path}/{created['id']}").status_code == 204
    assert_problem(api.get(f"{path}/{created['id']}"), 404)
    from tests.helpers import outbox_types
    assert [t for t in outbox_types(ctx) if "promo_code" in t] == [
        "hotel:pms:promo_code:created", "hotel:pms:promo_code:updated",
        "hotel:pms:promo_code:deleted"]


@pytest.mark.parametrize("body", [
    {"code": "P", "discount_type": "PERCENT", "discount_value": "101"},
    {"code": "P", "discount_type": "PERCENT", "discount_value": "-1"},
    {"code": "P", "discount_type": "HALF", "discount_value": "1"},
    {"code": "P", "discount_type": "FIXED", "discount_value": "1", "valid_from": "2030-02-01",
     "valid_to": "2030-01-01"},
    {"code": "P", "discount_type": "FIXED", "discount_value": "1",
     "rate_plan_ids": ["00000000-0000-4000-8000-000000000001"]},
    {"code": "with space", "discount_type": "FIXED", "discount_value": "1"},
])
def test_bad_promo_codes_are_422(api, hotel, body):
    assert_problem(api.post(hotel["base"] + "/promo-codes", body), 422)
