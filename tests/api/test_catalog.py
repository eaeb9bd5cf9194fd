"""Catalog CRUD over HTTP: properties, room types, rooms, rate plans, items and packages."""

from __future__ import annotations

import uuid

import pytest

from tests.helpers import assert_problem, outbox_types

KINDS = {
    "room-types": ({"code": "DBL", "name": "Double", "max_occupancy": 2}, {"name": "Double Deluxe"}),
    "rate-plans": ({"code": "BAR", "name": "Best available", "negotiated": False},
                   {"name": "Flexible"}),
    "items": ({"code": "WATER", "name": "Water", "category": "mini bar", "price": "2.50"},
              {"price": "3.00"}),
    "packages": ({"code": "BRK", "name": "Breakfast", "price": "18.00",
                  "calculation": "PER_PERSON_PER_NIGHT", "category": "F&B"}, {"name": "Brunch"}),
}


@pytest.fixture
def prop(api):
    resp = api.post("/v1/properties", {"propertyCode": "CAT1", "timezone": "America/New_York",
                                       "currencyCode": "USD", "languages": ["en", "es"]})
    assert resp.status_code == 201, resp.text
    return resp.json


def test_property_crud(api, prop, ctx):
    pid = prop["id"]
    assert api.get("/v1/properties").json["data"][0]["id"] == pid
    changed = api.put(f"/v1/properties/{pid}", {"name": "Casa", "languages": ["es"]}).json
    assert changed["name"] == "Casa" and changed["languages"] == ["es"]
    assert changed["propertyCode"] == "CAT1" and changed["timezone"] == "America/New_York"
    assert api.delete(f"/v1/properties/{pid}").status_code == 204
    assert_problem(api.get(f"/v1/properties/{pid}"), 404)
    assert outbox_types(ctx) == ["hotel:pms:property:created", "hotel:pms:property:updated",
                                 "hotel:pms:property:deleted"]


def test_property_code_change_to_a_taken_code_is_409(api, prop):
    other = api.post("/v1/properties", {"propertyCode": "CAT2", "timezone": "UTC",
                                        "currencyCode": "USD"}).json
    assert_problem(api.put(f"/v1/properties/{other['id']}", {"propertyCode": "CAT1"}), 409,
                   "already_exists")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_child_crud(api, prop, kind):
    create, patch = KINDS[kind]
    base = f"/v1/properties/{prop['id']}/{kind}"
    made = api.post(base, create)
    assert made.status_code == 201, made.text
    assert made.headers["location"].endswith(made.json["id"])
    item = f"{base}/{made.json['id']}"
    assert api.get(item).json == made.json
    updated = api.put(item, patch).json
    for key, value in patch.items():
        assert updated[key] == value
    assert [r["id"] for r in api.get(base).json["data"]] == [made.json["id"]]
    assert_problem(api.post(base, create), 409, "already_exists")
    assert api.delete(item).status_code == 204
    assert_problem(api.get(item), 404)
    assert api.get(base).json["data"] == []


def test_children_default_to_the_property_currency(api, prop):
    item = api.post(f"/v1/properties/{prop['id']}/items", KINDS["items"][0]).json
    plan = api.post(f"/v1/properties/{prop['id']}/rate-plans", KINDS["rate-plans"][0]).json
    assert item["currency"] == plan["currency"] == "USD"


def test_room_needs_a_room_type_of_the_same_property(api, prop):
    other = api.post("/v1/properties", {"propertyCode": "CAT3", "timezone": "UTC",
                                        "currencyCode": "USD"}).json
    foreign_rt = api.post(f"/v1/properties/{other['id']}/room-types", {"code": "X", "name": "X"}).json
    body = assert_problem(api.post(f"/v1/properties/{prop['id']}/rooms", {
        "room_number": "101", "room_type_id": foreign_rt["id"]}), 422)
    assert body["errors"][0]["field"] == "room_type_id"
    assert_problem(api.post(f"/v1/properties/{prop['id']}/rooms", {
        "room_number": "101", "room_type_id": str(uuid.uuid4())}), 422)


def test_rooms_crud_and_unique_numbers(api, prop):
    base = f"/v1/properties/{prop['id']}"
    rt = api.post(f"{base}/room-types", {"code": "DBL", "name": "Double"}).json
    room = api.post(f"{base}/rooms", {"room_number": "101", "room_type_id": rt["id"],
                                      "floor": "1"}).json
    assert room["status"] == "VACANT" and room["hk_status"] == "CLEAN"
    assert_problem(api.post(f"{base}/rooms", {"room_number": "101", "room_type_id": rt["id"]}),
                   409, "already_exists")
    moved = api.put(f"{base}/rooms/{room['id']}", {"floor": "2"}).json
    assert moved["floor"] == "2" and moved["room_number"] == "101"


def test_child_of_another_property_is_404(api, prop):
    other = api.post("/v1/properties", {"propertyCode": "CAT4", "timezone": "UTC",
                                        "currencyCode": "USD"}).json
    rt = api.post(f"/v1/properties/{other['id']}/room-types", {"code": "X", "name": "X"}).json
    assert_problem(api.get(f"/v1/properties/{prop['id']}/room-types/{rt['id']}"), 404)
    assert_problem(api.delete(f"/v1/properties/{prop['id']}/room-types/{rt['id']}"), 404)


def test_negative_prices_are_422(api, prop):
    assert_problem(api.post(f"/v1/properties/{prop['id']}/items", {
        **KINDS["items"][0], "price": "-1.00"}), 422)
    assert_problem(api.post(f"/v1/properties/{prop['id']}/rate-plans", {
        **KINDS["rate-plans"][0], "cancellation_policy": {"fee_type": "FIXED", "fee_value": "-5"}}), 422)


def test_rate_plan_package_codes_must_exist(api, prop):
    base = f"/v1/properties/{prop['id']}"
    assert_problem(api.post(f"{base}/rate-plans", {**KINDS["rate-plans"][0],
                                                   "package_codes": ["NOPE"]}), 422)
    api.post(f"{base}/packages", KINDS["packages"][0])
    plan = api.post(f"{base}/rate-plans", {**KINDS["rate-plans"][0], "package_codes": ["BRK"]})
    assert plan.status_code == 201 and plan.json["package_codes"] == ["BRK"]


def test_scopes_per_kind(api, prop, settings):
    from pms.devkeys import mint_token

    rates_only = mint_token(settings, env_id=api.env_id,
                            scopes=["hotel:pms:rates:read", "hotel:pms:rates:write"])
    base = f"/v1/properties/{prop['id']}"
    assert api.post(f"{base}/rate-plans", KINDS["rate-plans"][0], token=rates_only).status_code == 201
    assert_problem(api.post(f"{base}/room-types", KINDS["room-types"][0], token=rates_only), 403)
