"""One rule for ids in a request body: an id that names nothing the caller can see
is 422 naming the field, checked before any availability or state check (an unknown id in the
path stays 404). Derived from the document: every top-level `uuid` field of every request body
that has a recipe (tests/api/recipes.py), so a route added later is checked the day it has one.
"""

from __future__ import annotations

import copy
import uuid

import pytest

from pms.api.openapi import build_document
from pms.routes import all_routes
from tests.api.recipes import RECIPES, World

DOC = build_document(all_routes())
SCHEMAS = DOC["components"]["schemas"]


def _uuid_fields(schema: dict) -> list[str]:
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    props = SCHEMAS.get(name, schema).get("properties", {})
    out = []
    for prop, sub in props.items():
        options = sub.get("anyOf", [sub])
        if any(o.get("format") == "uuid" for o in options):
            out.append(prop)
    return out


CASES = sorted(
    (method.upper(), path, field)
    for path, ops in DOC["paths"].items() for method, op in ops.items()
    if (method.upper(), path) in RECIPES
    for field in _uuid_fields(op.get("requestBody", {}).get("content", {})
                              .get("application/json", {}).get("schema", {})))


def test_the_rule_covers_the_main_references():
    fields = {field for _m, _p, field in CASES}
    assert {"room_type_id", "rate_plan_id", "guest_profile_id"} <= fields, fields


@pytest.mark.parametrize(("method", "path", "field"), CASES,
                         ids=[f"{m} {p} {f}" for m, p, f in CASES])
def test_an_unknown_id_in_a_body_is_422_naming_the_field(api, method, path, field):
    world = World(api)
    url, body = RECIPES[(method, path)](world)
    body = copy.deepcopy(body) if isinstance(body, dict) else {}
    body[field] = str(uuid.uuid4())
    resp = api.request(method, url, json=body)
    assert resp.status_code == 422, (method, path, field, resp.status_code, resp.text)
    fields = [e.get("field") for e in resp.json.get("errors", [])]
    assert field in fields, (method, path, field, resp.json)


def test_a_walk_in_naming_an_unknown_profile_in_a_full_house_is_422(api, ctx):
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx, rooms=1)
    make_reservation(ctx, hotel)  # the one room is sold for tonight
    url = f"/v1/properties/{hotel.id}/walk-in"
    full = api.post(url, {"adults": 1, "guest": {"last_name": "Late"}})
    assert full.status_code == 409 and full.json["code"] == "room_type_unavailable", full.text
    resp = api.post(url, {"adults": 1, "guest": {"last_name": "Late"},
                          "guest_profile_id": str(uuid.uuid4())})
    assert resp.status_code == 422, resp.text
    assert resp.json["code"] == "unknown_reference", resp.json
    assert [e["field"] for e in resp.json["errors"]] == ["guest_profile_id"]


def test_housekeeping_tasks_list_their_room_id(api, ctx):
    from tests.factories import make_booking_hotel

    hotel = make_booking_hotel(ctx, rooms=1)
    base = f"/v1/properties/{hotel.id}/housekeeping/tasks"
    created = api.post(base, {"room_number": "100", "kind": "INSPECTION"})
    assert created.status_code == 201, created.text
    listed = api.get(base).json["data"]
    assert [t["room_id"] for t in listed] == [str(hotel.rooms[0].id)]
    assert api.get(f"{base}/{created.json['id']}").json["room_id"] == str(hotel.rooms[0].id)

