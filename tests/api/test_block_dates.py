"""Moving or extending a room block's dates through the HTTP API, on SQLite and PostgreSQL: the
grid moves (or grows) with the dates, the held rooms follow in the house's inventory, pick-ups
left outside the new dates are refused by name unless they move with the block, and the change
is one version and one event."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.models.reservations import Reservation
from tests.api.test_room_block_bulk import _receipt_consistent
from tests.api.test_room_blocks import ARR, DEP, _available, _block, _book, _pick
from tests.factories import make_hotel
from tests.helpers import assert_problem, outbox_types

DAY = timedelta(days=1)


@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=5)
    h.base = f"/v1/properties/{h.property.id}"
    return h


def _definite(api, h, rooms=3, code="MOVE"):
    block = _block(api, h, rooms=rooms, code=code)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    return api.get(f"{h.base}/blocks/{block['id']}").json


def _dates(api, h, block, arrival, departure, **extra):
    body = {"arrival_date": str(arrival), "departure_date": str(departure)}
    params = {}
    if "dry_run" in extra:
        params["dry_run"] = "true" if extra.pop("dry_run") else "false"
    body.update(extra)
    return api.post(f"{h.base}/blocks/{block['id']}/dates", body, params=params)


def _nights(api, h, block):
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    return {n["date"]: (n["allotted"], n["picked"], n["held"]) for n in out["allocation"]}


def _night_available(api, h, day):
    return _available(api, h, day, day + DAY)


def test_a_move_shifts_the_grid_and_the_held_rooms_follow(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    # the grid's nights differ so the move is seen cell by cell
    assert api.put(f"{h.base}/blocks/{block['id']}/allocation", {"allocation": [
        {"room_type_id": str(h.room_type.id), "date": str(ARR + 2 * DAY), "allotted": 1}]}
    ).status_code == 200
    before = api.get(f"{h.base}/blocks/{block['id']}").json
    assert [_night_available(api, h, ARR + i * DAY) for i in range(4)] == [2, 2, 4, 5]
    resp = _dates(api, h, block, ARR + DAY, DEP + DAY)
    assert resp.status_code == 200, resp.text
    moved = resp.json["block"]
    assert (moved["arrival_date"], moved["departure_date"]) == (str(ARR + DAY), str(DEP + DAY))
    assert moved["cutoff_date"] == str(ARR + DAY)  # it keeps its distance to the arrival
    assert _nights(api, h, block) == {str(ARR + DAY): (3, 0, 3), str(ARR + 2 * DAY): (3, 0, 3),
                                      str(ARR + 3 * DAY): (1, 0, 1)}
    # the house: the first night is free again, the new last night holds one
    assert [_night_available(api, h, ARR + i * DAY) for i in range(4)] == [5, 2, 2, 4]
    # one version, one event with the block as it is now and the held rooms' changes
    assert moved["version"] == before["version"] + 1
    assert outbox_types(ctx)[-1] == "hotel:pms:block:dates_changed"
    changes = {c["date"]: (c["held_before"], c["held_after"]) for c in resp.json["held_changes"]}
    assert changes == {str(ARR): (3, 0), str(ARR + 2 * DAY): (1, 3), str(ARR + 3 * DAY): (0, 1)}
    _receipt_consistent(api, ctx, h, block)


def test_extending_adds_nights_and_a_dry_run_changes_nothing(api, ctx, hotel):
    h = hotel
    block = _definite(api, h, rooms=2)
    extra = {"room_type_id": str(h.room_type.id), "date": str(DEP), "allotted": 2}
    dry = _dates(api, h, block, ARR, DEP + DAY, allocation=[extra], dry_run=True)
    assert dry.status_code == 200, dry.text
    assert dry.json["dry_run"] is True and dry.json["block"]["departure_date"] == str(DEP + DAY)
    assert api.get(f"{h.base}/blocks/{block['id']}").json["version"] == block["version"]
    assert _night_available(api, h, DEP) == 5
    # a night added without cells starts at 0 rooms; with cells, as they say
    resp = _dates(api, h, block, ARR - DAY, DEP + DAY, allocation=[extra])
    assert resp.status_code == 200, resp.text
    grid = _nights(api, h, block)
    assert grid[str(ARR - DAY)] == (0, 0, 0) and grid[str(DEP)] == (2, 0, 2)
    assert _night_available(api, h, DEP) == 3 and _night_available(api, h, ARR - DAY) == 5
    # shrinking drops nights, their held rooms back to the house
    assert _dates(api, h, block, ARR, DEP - DAY).status_code == 200
    assert sorted(_nights(api, h, block)) == [str(ARR), str(ARR + DAY)]
    assert _night_available(api, h, DEP - DAY) == 5 and _night_available(api, h, DEP) == 5
    _receipt_consistent(api, ctx, h, block)


def test_pick_ups_outside_the_new_dates_are_refused_by_name(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    first = _pick(api, h, block["id"], ARR, ARR + DAY)
    assert first.status_code == 201, first.text
    inside = _pick(api, h, block["id"], ARR + DAY, DEP)
    resp = _dates(api, h, block, ARR + DAY, DEP + DAY)
    problem = assert_problem(resp, 409, "block_pickups_outside_dates")
    assert [r["confirmation_number"] for r in problem["reservations"]] == [
        first.json["reservation"]["confirmation_number"]]
    # control: the same move without that stay goes through (the stay inside stays put)
    assert api.post(f"{h.base}/reservations/{first.json['reservation']['id']}/cancel"
                    ).status_code == 200
    ok = _dates(api, h, block, ARR + DAY, DEP + DAY)
    assert ok.status_code == 200, ok.text
    grid = _nights(api, h, block)
    assert grid[str(ARR + DAY)][1] == 1 and grid[str(ARR + 2 * DAY)][1] == 1
    assert inside.json["reservation"]["arrival_date"] == str(ARR + DAY)
    _receipt_consistent(api, ctx, h, block)


def test_the_pick_ups_move_with_the_block_in_one_transaction(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    picks = [_pick(api, h, block["id"], ARR, DEP, guest={"last_name": f"G{i}"}).json[
        "reservation"] for i in range(2)]
    resp = _dates(api, h, block, ARR + DAY, DEP + DAY, move_pickups=True)
    assert resp.status_code == 200, resp.text
    with read_scope(ctx):
        moved = {str(r.id): (r.arrival_date, r.departure_date) for r in Reservation.select()
                 .where(Reservation.block_id == block["id"])}
    assert set(moved.values()) == {(ARR + DAY, DEP + DAY)}
    grid = _nights(api, h, block)
    assert grid == {str(ARR + i * DAY): (3, 2, 1) for i in (1, 2, 3)}
    # the house: two sold and one held on each new night, the old first night free
    assert [_night_available(api, h, ARR + i * DAY) for i in range(4)] == [5, 2, 2, 2]
    types = outbox_types(ctx)
    assert types[-1] == "hotel:pms:block:dates_changed"
    assert types.count("hotel:pms:reservation:updated") >= len(picks)
    _receipt_consistent(api, ctx, h, block)


def test_a_move_into_full_nights_is_refused_and_changes_nothing(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    pick = _pick(api, h, block["id"], ARR, DEP).json["reservation"]
    for _ in range(3):  # the night after the block: 3 of 5 rooms sold to the house
        assert _book(api, h, DEP, DEP + DAY).status_code == 201
    before = api.get(f"{h.base}/blocks/{block['id']}").json
    for body in ({}, {"move_pickups": True}):
        resp = _dates(api, h, block, ARR + DAY, DEP + DAY, **body)
        problem = assert_problem(resp, 409, "block_pickups_outside_dates" if not body
                                 else "room_type_unavailable")
        if body:
            assert problem["nights"] == [str(DEP)]
    after = api.get(f"{h.base}/blocks/{block['id']}").json
    assert after["version"] == before["version"] and after["allocation"] == before["allocation"]
    assert api.get(f"{h.base}/reservations/{pick['id']}").json["arrival_date"] == str(ARR)
    # control: a move by one day where the house has the rooms goes through
    assert _dates(api, h, block, ARR - DAY, DEP - DAY, move_pickups=True).status_code == 200
    _receipt_consistent(api, ctx, h, block)


def test_bad_dates_are_problem_json(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    assert_problem(_dates(api, h, block, DEP, ARR), 422)
    assert_problem(_dates(api, h, block, ARR, DEP, cutoff_date=str(DEP)), 422)
    assert_problem(_dates(api, h, block, ARR, "9999-12-31"), 422)
    assert_problem(_dates(api, h, block, ARR, DEP, allocation=[
        {"room_type_id": str(h.room_type.id), "date": str(DEP + 5 * DAY), "allotted": 1}]), 422)
    assert api.post(f"{h.base}/blocks/{block['id']}/cancel").status_code == 200
    assert_problem(_dates(api, h, block, ARR + DAY, DEP + DAY), 409, "invalid_transition")


def test_a_dry_run_move_with_its_pick_ups_changes_nothing(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    pick = _pick(api, h, block["id"], ARR, DEP).json["reservation"]
    before = api.get(f"{h.base}/blocks/{block['id']}").json
    types = outbox_types(ctx)
    dry = _dates(api, h, block, ARR + DAY, DEP + DAY, move_pickups=True, dry_run=True)
    assert dry.status_code == 200, dry.text
    assert dry.json["dry_run"] is True
    assert dry.json["block"]["arrival_date"] == str(ARR + DAY)
    assert [n["picked"] for n in dry.json["block"]["allocation"]] == [1, 1, 1]
    after = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (after["version"], after["allocation"]) == (before["version"], before["allocation"])
    assert api.get(f"{h.base}/reservations/{pick['id']}").json["arrival_date"] == str(ARR)
    assert outbox_types(ctx) == types
    assert [_night_available(api, h, ARR + i * DAY) for i in range(4)] == [2, 2, 2, 5]
    _receipt_consistent(api, ctx, h, block)
