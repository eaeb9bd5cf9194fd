"""Rooms created, deleted or moved to another type take the nights' locks of the booking, and a
room type never keeps fewer rooms than it has sold and held by blocks (HTTP API, SQLite and
PostgreSQL)."""

from __future__ import annotations

from tests.api.test_room_blocks import ARR, DEP, _block, _book
from tests.factories import make_hotel, make_room_type
from tests.helpers import assert_problem


def _available(api, h):
    resp = api.post(f"{h.base}/availability", {"arrival_date": str(ARR),
                                               "departure_date": str(DEP), "adults": 1})
    assert resp.status_code == 200, resp.text
    return {rt["room_type_id"]: rt["available"] for rt in resp.json["room_types"]}[
        str(h.room_type.id)]


def test_a_room_delete_or_move_below_sold_and_held_is_refused(api, ctx):
    h = make_hotel(ctx, rooms=3)
    base = f"/v1/properties/{h.property.id}"
    h.base = base
    block = _block(api, h, rooms=2)
    assert api.post(f"{base}/blocks/{block['id']}/definite").status_code == 200
    assert _book(api, h).status_code == 201  # 1 sold + 2 held of 3 rooms
    other = make_room_type(ctx, h.property.id)
    room = h.rooms[0]
    resp = api.delete(f"{base}/rooms/{room.id}")
    problem = assert_problem(resp, 409, "room_type_oversold")
    assert problem["nights"] == [str(ARR), "2030-01-04", "2030-01-05"]
    moved = api.put(f"{base}/rooms/{room.id}", {"room_type_id": str(other.id)})
    assert_problem(moved, 409, "room_type_oversold")
    assert api.get(f"{base}/rooms/{room.id}").json["room_type_id"] == str(h.room_type.id)
    # with one more room, the move is fine and the search follows it
    made = api.post(f"{base}/rooms", {"room_number": "901", "room_type_id": str(h.room_type.id)})
    assert made.status_code == 201, made.text
    assert _available(api, h) == 1
    moved = api.put(f"{base}/rooms/{room.id}", {"room_type_id": str(other.id)})
    assert moved.status_code == 200, moved.text
    assert _available(api, h) == 0
