"""A cut-off date per night of a block's grid, through the HTTP API on SQLite and PostgreSQL:
the night audit gives each night's unpicked rooms back to the house on the night's own date
(the block's other nights keep holding), a pick-up on a released night sells from the house,
and the block is cut off whole once its last night is."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.services.night_audit.end_of_day import Hooks, run_night_audit
from pms.services.reservations.reservations import business_date
from tests.api.test_room_block_bulk import _receipt_consistent
from tests.api.test_room_blocks import _available
from tests.factories import make_hotel
from tests.helpers import EOD_OVERRIDE, assert_problem, outbox_types

DAY = timedelta(days=1)


@pytest.fixture
def today_hotel(ctx):
    probe = make_hotel(ctx, rooms=1)
    today = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=4, from_date=today)
    h.base = f"/v1/properties/{h.property.id}"
    h.today = today
    return h


def _audit(ctx, h):
    result = run_night_audit(ctx, h.property.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    return {s.name: s for s in result.steps}["block_cut_offs"]


def _grid(api, h, block):
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    return out, {n["date"]: (n["held"], n["released"], n["cut_off"], n["cutoff_date"])
                 for n in out["allocation"]}


def test_each_night_goes_back_to_the_house_on_its_own_date(api, ctx, today_hotel):
    h = today_hotel
    first = h.today + 3 * DAY
    nights = [first, first + DAY]
    tomorrow = h.today + DAY
    block = api.post(f"{h.base}/blocks", {
        "code": "NIGHTLY", "name": "Nightly cut-off", "arrival_date": str(first),
        "departure_date": str(first + 2 * DAY), "rate_plan_id": str(h.rate_plan.id),
        "cutoff_date": str(first),
        "allocation": [
            {"room_type_id": str(h.room_type.id), "date": str(first), "allotted": 2,
             "cutoff_date": str(tomorrow)},
            {"room_type_id": str(h.room_type.id), "date": str(first + DAY), "allotted": 2}]})
    assert block.status_code == 201, block.text
    block = block.json
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    _, grid = _grid(api, h, block)
    assert grid[str(first)] == (2, 0, False, str(tomorrow))
    assert grid[str(first + DAY)] == (2, 0, False, str(first))  # the block's own date
    assert [_available(api, h, d, d + DAY) for d in nights] == [2, 2]
    step = _audit(ctx, h)  # rolls to tomorrow: the first night's own date has come
    assert step.detail == {"blocks": ["NIGHTLY"]}
    out, grid = _grid(api, h, block)
    assert grid[str(first)] == (0, 2, True, str(tomorrow))
    assert grid[str(first + DAY)] == (2, 0, False, str(first))
    assert out["cut_off_at"] is None and out["held"] == 2
    assert [_available(api, h, d, d + DAY) for d in nights] == [4, 2]
    assert outbox_types(ctx).count("hotel:pms:block:nights_cut_off") == 1
    assert "hotel:pms:block:cut_off" not in outbox_types(ctx)
    # a pick-up over both nights: the released night sells from the house, the other converts
    pick = api.post(f"{h.base}/blocks/{block['id']}/reservations", {
        "room_type_id": str(h.room_type.id), "arrival_date": str(first),
        "departure_date": str(first + 2 * DAY), "guest": {"last_name": "Late"}})
    assert pick.status_code == 201, pick.text
    assert [_available(api, h, d, d + DAY) for d in nights] == [3, 2]
    # a second audit with nothing due cuts off nothing (control)
    assert _audit(ctx, h).detail == {"blocks": []}
    assert api.get(f"{h.base}/blocks/{block['id']}").json["cut_off_at"] is None
    # the block's own date: its last holding night goes, and the block is cut off whole
    assert _audit(ctx, h).detail == {"blocks": ["NIGHTLY"]}
    out, grid = _grid(api, h, block)
    assert out["cut_off_at"] is not None and out["held"] == 0
    assert grid[str(first + DAY)] == (0, 1, True, str(first))
    assert grid[str(first)][1] == 2  # released on its own date, kept
    assert "hotel:pms:block:cut_off" in outbox_types(ctx)
    assert [_available(api, h, d, d + DAY) for d in nights] == [3, 3]
    _receipt_consistent(api, ctx, h, block)


def test_a_night_cut_off_is_never_after_its_night(api, ctx, today_hotel):
    h = today_hotel
    first = h.today + 3 * DAY
    resp = api.post(f"{h.base}/blocks", {
        "code": "BAD", "name": "Bad", "arrival_date": str(first),
        "departure_date": str(first + DAY), "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(first),
                        "allotted": 1, "cutoff_date": str(first + DAY)}]})
    assert_problem(resp, 422)
    assert resp.json["errors"][0]["field"] == "allocation[0].cutoff_date"


def test_the_grid_sets_a_nights_cut_off_and_a_repeat_keeps_it(api, ctx, today_hotel):
    h = today_hotel
    first = h.today + 3 * DAY
    block = api.post(f"{h.base}/blocks", {
        "code": "PUTCUT", "name": "Grid cut-off", "arrival_date": str(first),
        "departure_date": str(first + 2 * DAY), "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(first),
                        "to_date": str(first + DAY), "allotted": 1}]}).json
    cell = {"room_type_id": str(h.room_type.id), "date": str(first + DAY), "allotted": 1,
            "cutoff_date": str(h.today + DAY)}
    resp = api.put(f"{h.base}/blocks/{block['id']}/allocation", {"allocation": [cell]})
    assert resp.status_code == 200, resp.text
    _, grid = _grid(api, h, block)
    assert grid[str(first + DAY)][3] == str(h.today + DAY)
    assert grid[str(first)][3] == str(first)
    # a cell sent again without a cut-off keeps the one it has
    cell.pop("cutoff_date")
    cell["allotted"] = 2
    assert api.put(f"{h.base}/blocks/{block['id']}/allocation",
                   {"allocation": [cell]}).status_code == 200
    _, grid = _grid(api, h, block)
    assert grid[str(first + DAY)] == (0, 0, False, str(h.today + DAY))
