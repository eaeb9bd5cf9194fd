"""A malformed pagination cursor is a 422 `invalid_cursor` on every list route (issue 25, item 6:
`?cursor=WzEsIDJd`, or a null or a boolean inside the decoded cursor, were a 500 on all of them).
The list routes come from the route table: every GET whose query schema has a `cursor`."""

from __future__ import annotations

import base64
import json
import re
import uuid

import msgspec

from pms.routes import all_routes, operations
from tests.factories import make_booking_hotel, make_reservation


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


def _list_routes() -> list[str]:
    found = []
    for method, path, _, spec in operations(all_routes()):
        if method == "GET" and spec.query is not None and "cursor" in {
                f.name for f in msgspec.structs.fields(spec.query)}:
            found.append(path)
    return found


def test_the_route_table_has_the_list_routes():
    assert len(_list_routes()) >= 16


def test_a_malformed_cursor_is_a_422_invalid_cursor_on_every_list_route(api, ctx):
    hotel = make_booking_hotel(ctx)
    res = make_reservation(ctx, hotel)
    ids = {"property_id": str(hotel.id), "id": str(res.id)}
    wrong = []
    for path in _list_routes():
        concrete = re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)
        assert api.get(concrete).status_code == 200, concrete  # the route answers without one
        for cursor in HOSTILE:
            resp = api.get(concrete, params={"cursor": cursor})
            if (resp.status_code != 422
                    or resp.headers.get("content-type") != "application/problem+json"
                    or resp.json.get("code") != "invalid_cursor"):
                wrong.append((path, cursor, resp.status_code, resp.text[:100]))
    assert wrong == []
