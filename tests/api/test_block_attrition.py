"""A block's pick-up and attrition view through the HTTP API, on SQLite and PostgreSQL
(GET .../blocks/{id}/attrition): contracted against current and picked, the percentages, the
room revenue of its stays and its wash history."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from tests.api.test_room_blocks import _block, _pick
from tests.api.test_room_blocks import hotel as block_hotel  # noqa: F401
from tests.helpers import assert_problem

pytestmark = pytest.mark.usefixtures("database")


def test_attrition_reads_contract_pickup_revenue_and_washes(api, block_hotel):  # noqa: F811
    h = block_hotel
    block = _block(api, h, rooms=4)  # 4 rooms x 3 nights
    url = f"{h.base}/blocks/{block['id']}/attrition"
    first = api.get(url)
    assert first.status_code == 200, first.text
    assert (first.json["contracted"], first.json["current"], first.json["picked"]) == (12, 12, 0)
    assert first.json["pickup_percent"] == "0.00" and first.json["washes"] == []
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    stays = [_pick(api, h, block["id"], guest={"last_name": f"M{i}"}).json["reservation"]
             for i in range(2)]
    third = _pick(api, h, block["id"], guest={"last_name": "Gone"}).json["reservation"]
    assert api.post(f"{h.base}/blocks/{block['id']}/wash", {"rooms": 1}).status_code == 200
    # a cancelled stay gives its nights back to the block and leaves the revenue
    assert api.post(f"{h.base}/reservations/{third['id']}/cancel", {}).status_code == 200
    assert api.post(f"{h.base}/blocks/{block['id']}/wash", {"percent": 50}).status_code == 200
    got = api.get(url).json
    # per night: 4 contracted, wash 1 (3 left), wash 50% of 3 = 1 (2 left, both picked)
    assert [(n["contracted"], n["current"], n["picked"], n["washed"])
            for n in got["by_night"]] == [(4, 2, 2, 2)] * 3
    assert (got["contracted"], got["current"], got["picked"], got["washed"]) == (12, 6, 6, 6)
    assert got["pickup_percent"] == "50.00" and got["current_pickup_percent"] == "100.00"
    assert got["by_night"][0]["pickup_percent"] == "50.00"
    assert got["reservations"] == 2
    assert Decimal(got["room_revenue"]) == sum(Decimal(r["room_total"]) for r in stays)
    assert Decimal(got["room_revenue"]) > 0 and got["currency"] == h.rate_plan.currency
    assert [w["rooms"] for w in got["washes"]] == [3, 3]
    assert all(w["actor_sub"] for w in got["washes"])
    assert got["washes"][0]["at"] <= got["washes"][1]["at"]
    # the view agrees with the block's own grid
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["allotted"], out["picked"]) == (got["current"], got["picked"])
    assert_problem(api.get(f"{h.base}/blocks/{uuid.uuid4()}/attrition"), 404)
