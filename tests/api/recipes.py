"""A valid request for every mutating route, so route-wide tests (one outbox + one audit row per
change, a forced failure leaves nothing, another env's ids answer 404) cover the whole router.

`World` builds a small hotel through the API; a recipe turns a route into (path, body) within
that world. A mutating route without a recipe makes `test_every_mutating_route_has_a_recipe` fail,
so new routes cannot slip past these tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tests.helpers import random_ref


class World:
    """A property with one of everything, created through the API of one env."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.property_id = self._post("/v1/properties", {
            "propertyCode": random_ref("W").upper(), "timezone": "Europe/Berlin",
            "currencyCode": "EUR"})["id"]
        base = f"/v1/properties/{self.property_id}"
        self.base = base
        self.room_type_id = self._post(f"{base}/room-types", {"code": random_ref("RT"),
                                                               "name": "Double"})["id"]
        self.room_id = self._post(f"{base}/rooms", {"room_number": random_ref("R")[-5:],
                                                    "room_type_id": self.room_type_id})["id"]
        self.rate_plan_id = self._post(f"{base}/rate-plans", {"code": random_ref("RP"),
                                                              "name": "BAR"})["id"]
        self.item_id = self._post(f"{base}/items", {"code": random_ref("IT"), "name": "Water",
                                                    "category": "mini bar", "price": "2.00"})["id"]
        self.package_id = self._post(f"{base}/packages", {"code": random_ref("PK"),
                                                          "name": "Breakfast", "price": "12.00"})["id"]
        self.profile_id = self._post(f"{base}/profiles", {
            "first_name": "Ada", "last_name": "Lovelace",
            "email": f"{random_ref('w')}@example.com"})["id"]

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self.api.post(path, body)
        assert resp.status_code in (200, 201), (path, resp.status_code, resp.text)
        return resp.json

    def fill(self, template: str, ids: dict[str, str] | None = None) -> str:
        values = {"property_id": self.property_id, **(ids or {})}
        out = template
        for name, value in values.items():
            out = out.replace("{" + name + "}", str(value))
        return out


Recipe = Callable[[World], tuple[str, Any]]

P = "/v1/properties/{property_id}"


def _child(path: str, attr: str, body: Callable[[World], dict[str, Any]],
           patch: dict[str, Any] | None = None) -> dict[tuple[str, str], Recipe]:
    """POST a new one; PUT/PATCH/DELETE the world's one."""
    item = f"{P}/{path}/{{id}}"

    def on_item(w: World) -> str:
        return w.fill(item, {"id": getattr(w, attr)})

    return {
        ("POST", f"{P}/{path}"): lambda w: (w.fill(f"{P}/{path}"), body(w)),
        ("PUT", item): lambda w: (on_item(w), patch or {"name": "Renamed"}),
        ("PATCH", item): lambda w: (on_item(w), patch or {"name": "Renamed again"}),
        ("DELETE", item): lambda w: (on_item(w), None),
    }


RECIPES: dict[tuple[str, str], Recipe] = {
    ("POST", "/v1/properties"): lambda w: ("/v1/properties", {
        "propertyCode": random_ref("N").upper(), "timezone": "UTC", "currencyCode": "USD"}),
    ("PUT", P): lambda w: (w.fill(P), {"name": "Grand"}),
    ("PATCH", P): lambda w: (w.fill(P), {"languages": ["en"]}),
    # a property with children cannot be deleted: use a fresh empty one
    ("DELETE", P): lambda w: (f"/v1/properties/{w._post('/v1/properties', {'propertyCode': random_ref('D').upper(), 'timezone': 'UTC', 'currencyCode': 'EUR'})['id']}", None),
    **_child("room-types", "room_type_id", lambda w: {"code": random_ref("RT"), "name": "Twin"}),
    **_child("rooms", "room_id", lambda w: {"room_number": random_ref("R")[-5:],
                                             "room_type_id": w.room_type_id},
                       {"floor": "7"}),
    **_child("rate-plans", "rate_plan_id", lambda w: {"code": random_ref("RP"), "name": "Flex"}),
    **_child("items", "item_id", lambda w: {"code": random_ref("IT"), "name": "Soda",
                                             "category": "mini bar", "price": "3.00"}),
    **_child("packages", "package_id", lambda w: {"code": random_ref("PK"), "name": "Parking",
                                                   "price": "20.00"}),
    ("POST", f"{P}/profiles"): lambda w: (w.fill(f"{P}/profiles"), {
        "first_name": "Alan", "last_name": "Turing", "email": f"{random_ref('t')}@example.com"}),
    ("PUT", f"{P}/profiles/{{id}}/loyalty-number"): lambda w: (
        w.fill(f"{P}/profiles/{{id}}/loyalty-number", {"id": w.profile_id}),
        {"loyalty_number": "LOY-" + uuid.uuid4().hex[:8]}),
}

# Room deletes need the room unreferenced; the world's room is. Room types/rate plans/items/
# packages deleted after their rooms? The world's room type has a room, so deleting it is the
# 409 case: use a fresh one for DELETE.
RECIPES[("DELETE", f"{P}/room-types/{{id}}")] = lambda w: (
    w.fill(f"{P}/room-types/{{id}}", {"id": w._post(w.fill(f"{P}/room-types"), {
        "code": random_ref("RT"), "name": "Spare"})["id"]}), None)
