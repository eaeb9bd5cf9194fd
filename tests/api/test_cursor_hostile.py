"""A malformed pagination cursor is a 422 `invalid_cursor` on every list route (
`?cursor=WzEsIDJd`, or a null or a boolean inside the decoded cursor, were a 500 on all of them).
The list routes come from the route table: every GET whose query schema has a `cursor`."""

from __future__ import annotations

import base64
import json
import re
import uuid
from datetime import timedelta

import msgspec

from pms.routes import all_routes, operations
from tests.factories import make_booking_hotel, make_profile, make_reservation


def _cursor(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


HOSTILE = [
    "WzEsIDJd",  # [1, 2]
    _cursor([None, None]),
    _cursor([True, False]),
    _cursor(["2026-01-01T00:00:00+00:00", None]),
    _cursor([None, str(uuid.UUID(int=1))]),
    _cursor(["2026-01-01T00:00:00+00:00", False]),
    _cursor(["2026-01-01T00:00:00+00:00", 7]),
    _cursor([{"a": 1}, []]),
    _cursor(["0001-01-01T00:00:00+14:00", str(uuid.UUID(int=1))]),  # before year 1 in UTC
    _cursor(["not a time", "not an id"]),
    _cursor("a string"),
    _cursor([1]),
    "!!!not base64",
    base64.urlsafe_b64encode(b"\xff\xfe").decode(),
]


def _list_routes() -> list[tuple[str, tuple[str, ...]]]:
    """(path, the query fields it requires) of every list route."""
    found = []
    for method, path, _, spec in operations(all_routes()):
        if method == "GET" and spec.query is not None:
            fields = msgspec.structs.fields(spec.query)
            if "cursor" in {f.name for f in fields}:
                found.append((path, tuple(f.name for f in fields if f.required)))
    return found


def test_the_route_table_has_the_list_routes():
    assert len(_list_routes()) >= 16


def test_a_malformed_cursor_is_a_422_invalid_cursor_on_every_list_route(api, ctx):
    hotel = make_booking_hotel(ctx)
    res = make_reservation(ctx, hotel)
    profile = make_profile(ctx, hotel.id)
    company = make_profile(ctx, hotel.id, kind="COMPANY", company_name="Cursor Co",
                           first_name=None, last_name=None)
    ids = {"property_id": str(hotel.id), "id": str(res.id),
           "profile_id": str(company.id),  # the corporate lists
           "list": "reservation-statuses",  # /v1/lov/{list}: a list that needs no parent
           "room_number": hotel.rooms[0].room_number}  # a room's live keys
    night = hotel.today + timedelta(days=20)
    block = api.post(f"/v1/properties/{hotel.id}/blocks", {
        "code": "CURSOR", "name": "Cursor group", "arrival_date": night.isoformat(),
        "departure_date": (night + timedelta(days=1)).isoformat(),
        "rate_plan_id": str(hotel.rate_plan.id),
        "allocation": [{"room_type_id": str(hotel.room_type.id), "date": night.isoformat(),
                        "to_date": night.isoformat(), "allotted": 1}]})
    assert block.status_code == 201, block.text
    wrong = []
    for path, required in _list_routes():
        named = {**ids, "id": str(profile.id)} if "/profiles/{id}" in path else ids
        if "/blocks/{id}" in path:  # a block's own lists (its rooming list)
            named = {**named, "id": block.json["id"]}
        concrete = re.sub(r"\{(\w+)\}", lambda m, named=named: named[m.group(1)], path)
        # a required filter gets the reservation's id (digital keys: ?reservation_id=)
        params = {name: ids.get(name, str(res.id)) for name in required}
        resp = api.get(concrete, params=params)
        assert resp.status_code == 200, (concrete, resp.text)  # the route answers without one
        for cursor in HOSTILE:
            resp = api.get(concrete, params={**params, "cursor": cursor})
            if (resp.status_code != 422
                    or resp.headers.get("content-type") != "application/problem+json"
                    or resp.json.get("code") != "invalid_cursor"):
                wrong.append((path, cursor, resp.status_code, resp.text[:100]))
    assert wrong == []
