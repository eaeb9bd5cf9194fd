"""A block's rate grid through the HTTP API, on SQLite and PostgreSQL: a night's contracted rate
per room type prices the block's pick-ups (the rate plan prices the nights without one), a
change of a picked-up stay's dates is priced at the grid again, the grid moves with the block's
dates, and the house's own bookings keep the plan's price."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.api.test_block_dates import _dates
from tests.api.test_room_block_bulk import _bulk
from tests.api.test_room_blocks import ARR, DEP, _book, _pick
from tests.factories import make_hotel
from tests.helpers import assert_problem

DAY = timedelta(days=1)


@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=5)  # the plan's price: 100.00 every night
    h.base = f"/v1/properties/{h.property.id}"
    return h


def _cell(h, day, allotted=3, **extra):
    return {"room_type_id": str(h.room_type.id), "date": str(day), "allotted": allotted,
            **extra}


def _prices(reservation):
    return {n["date"]: n["amount"] for n in reservation["nightly_prices"]}


def _rates(api, h, block):
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    return {n["date"]: n["rate"] for n in out["allocation"]}


def _grid_block(api, h):
    resp = api.post(f"{h.base}/blocks", {
        "code": "RATES", "name": "Contracted rates", "arrival_date": str(ARR),
        "departure_date": str(DEP), "rate_plan_id": str(h.rate_plan.id),
        "allocation": [_cell(h, ARR, rate="80.00"), _cell(h, ARR + DAY, rate="85.50"),
                       _cell(h, ARR + 2 * DAY)]})
    assert resp.status_code == 201, resp.text
    block = resp.json
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    return block


def test_a_pick_up_is_priced_at_the_grid_and_the_plan_fills_the_rest(api, hotel):
    h = hotel
    block = _grid_block(api, h)
    assert _rates(api, h, block) == {str(ARR): "80.00", str(ARR + DAY): "85.50",
                                     str(ARR + 2 * DAY): None}
    pick = _pick(api, h, block["id"])
    assert pick.status_code == 201, pick.text
    stay = pick.json["reservation"]
    assert _prices(stay) == {str(ARR): "80.00", str(ARR + DAY): "85.50",
                             str(ARR + 2 * DAY): "100.00"}
    assert stay["room_total"] == "265.50"
    # the house's own booking of the same nights keeps the plan's price (control)
    house = _book(api, h)
    assert house.status_code == 201, house.text
    assert set(_prices(house.json).values()) == {"100.00"}


def test_a_grid_change_prices_the_next_pick_up_and_a_date_change_reprices(api, ctx, hotel):
    h = hotel
    block = _grid_block(api, h)
    first = _pick(api, h, block["id"]).json["reservation"]
    # the third night gets its rate; a cell left without one keeps its own
    resp = api.put(f"{h.base}/blocks/{block['id']}/allocation", {"allocation": [
        _cell(h, ARR + 2 * DAY, rate="90.00"), _cell(h, ARR, allotted=4)]})
    assert resp.status_code == 200, resp.text
    assert _rates(api, h, block) == {str(ARR): "80.00", str(ARR + DAY): "85.50",
                                     str(ARR + 2 * DAY): "90.00"}
    second = _pick(api, h, block["id"]).json["reservation"]
    assert _prices(second)[str(ARR + 2 * DAY)] == "90.00"
    # a booked stay keeps the price it was sold at until its dates change
    again = api.get(f"{h.base}/reservations/{first['id']}").json
    assert _prices(again)[str(ARR + 2 * DAY)] == "100.00"
    _, result = _bulk(api, ctx, h, block, "bulk-date-change", {
        "reservation_ids": [first["id"]], "arrival_date": str(ARR + DAY),
        "departure_date": str(DEP)})
    assert [r["outcome"] for r in result["rows"]] == ["moved"], result
    moved = api.get(f"{h.base}/reservations/{first['id']}").json
    assert _prices(moved) == {str(ARR + DAY): "85.50", str(ARR + 2 * DAY): "90.00"}
    assert moved["room_total"] == "175.50"


def test_the_grid_moves_with_the_block(api, hotel):
    h = hotel
    block = _grid_block(api, h)
    resp = _dates(api, h, block, ARR + DAY, DEP + DAY)
    assert resp.status_code == 200, resp.text
    assert _rates(api, h, block) == {str(ARR + DAY): "80.00", str(ARR + 2 * DAY): "85.50",
                                     str(ARR + 3 * DAY): None}
    stay = _pick(api, h, block["id"], ARR + DAY, DEP + DAY).json["reservation"]
    assert _prices(stay)[str(ARR + DAY)] == "80.00"


@pytest.mark.parametrize("rate", ["-1.00", "abc", "NaN", 80])
def test_a_rate_that_is_not_an_amount_is_refused(api, hotel, rate):
    h = hotel
    resp = api.post(f"{h.base}/blocks", {
        "code": "BAD", "name": "Bad rate", "arrival_date": str(ARR),
        "departure_date": str(DEP), "rate_plan_id": str(h.rate_plan.id),
        "allocation": [_cell(h, ARR, rate=rate)]})
    assert_problem(resp, 422)
