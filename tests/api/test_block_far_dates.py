"""Far dates answer 422 date_out_of_range naming the field, never a 500, on both databases: one
bound for every date a request carries (pms.schemas.date_bounds). Driven by the route table and
the recipes: every date or date-time in every recipe's body is pushed to the end of the
calendar, and the date query strings of blocks, banquets, inventory, allotments and ARI too."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from pms.routes import all_routes, operations
from pms.schemas.date_bounds import LAST_DATE
from tests.api.recipes import RECIPES, World
from tests.helpers import assert_problem

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T")
FAR = {"date": ["9999-12-31", "9999-01-01"],
       "datetime": ["9999-12-31T23:00:00+00:00", "9999-12-31T00:00:00Z"]}
OPERATIONS = [(m, p, spec) for m, p, _fn, spec in operations(all_routes())]
BODY_ROUTES = sorted({(m, p) for m, p, spec in OPERATIONS if spec.body is not None
                      and (m, p) in RECIPES})


def _date_leaves(value: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items()
                for leaf in _date_leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _date_leaves(v, f"{path}[{i}]")]
    if isinstance(value, str) and DATE.match(value):
        return [(path, "date")]
    if isinstance(value, str) and DATETIME.match(value):
        return [(path, "datetime")]
    return []


def _with(body: Any, leaf: str, value: str) -> Any:
    out = copy.deepcopy(body)
    node, parts = out, leaf.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(parts[-1]) if isinstance(node, list) else parts[-1]] = value
    return out


@pytest.mark.parametrize("method,path", BODY_ROUTES, ids=[f"{m} {p}" for m, p in BODY_ROUTES])
def test_a_far_date_in_any_body_is_422_naming_the_field(api, method, path):
    world = World(api)
    url, body = RECIPES[(method, path)](world)
    leaves = _date_leaves(body) if isinstance(body, dict) else []
    if not leaves:
        pytest.skip("the recipe's body has no date")
    for leaf, kind in leaves:
        if leaf.startswith("rows["):  # a rooming list's rows: refused row by row (below)
            continue
        for far in FAR[kind]:
            resp = api.request(method, url, json=_with(body, leaf, far))
            problem = assert_problem(resp, 422, "date_out_of_range")
            assert [e["field"] for e in problem["errors"]] == [leaf], problem


def test_the_last_date_itself_is_accepted(api, ctx):
    from tests.factories import make_hotel

    h = make_hotel(ctx, rooms=2)
    base = f"/v1/properties/{h.property.id}"
    last = LAST_DATE.isoformat()
    resp = api.put(f"{base}/inventory", {"room_type_id": str(h.room_type.id),
                                         "from_date": last, "to_date": last, "sell_limit": 1})
    assert resp.status_code == 200, resp.text
    resp = api.post(f"{base}/maintenance", {"room_id": str(h.rooms[0].id),
                                            "kind": "OUT_OF_ORDER", "from_date": last,
                                            "to_date": last})
    assert resp.status_code == 201, resp.text
    resp = api.put(f"{base}/rate-plans/{h.rate_plan.id}/allotments", {
        "room_type_id": str(h.room_type.id), "from_date": last, "to_date": last,
        "allotment": 1})
    assert resp.status_code == 200, resp.text
    got = api.get(f"{base}/rate-plans/{h.rate_plan.id}/allotments",
                  params={"from_date": last, "to_date": last})
    assert got.status_code == 200, got.text
    space = api.post(f"{base}/function-spaces", {"name": "Hall", "capacities": {"BANQUET": 9}})
    ev = api.post(f"{base}/events", {"name": "Late", "space_id": space.json["id"],
                                     "setup_style": "BANQUET",
                                     "start_at": f"{last}T20:00:00+00:00",
                                     "end_at": f"{last}T23:00:00+00:00",
                                     "teardown_minutes": 600, "attendees_forecast": 5})
    assert ev.status_code == 201, ev.text
    moved = api.post(f"{base}/events/{ev.json['id']}/tentative", None)
    assert moved.status_code == 200, moved.text


@pytest.mark.parametrize("tail,params,field", [
    ("/inventory", {"from_date": "9999-12-01", "to_date": "9999-12-31"}, "from_date"),
    ("/rate-plans/{plan}/restrictions", {"from_date": "2030-01-01", "to_date": "9999-12-31"},
     "to_date"),
    ("/rate-plans/{plan}/allotments", {"from_date": "9999-12-30", "to_date": "9999-12-31"},
     "from_date"),
    ("/ari/digest", {"from": "9999-12", "to": "9999-12"}, "from"),
])
def test_a_far_date_in_a_query_string_is_422(api, ctx, tail, params, field):
    from tests.factories import make_hotel

    h = make_hotel(ctx, rooms=1)
    url = f"/v1/properties/{h.property.id}" + tail.format(plan=h.rate_plan.id)
    resp = api.get(url, params=params)
    problem = assert_problem(resp, 422)
    assert problem["errors"][0]["field"] == field, problem


def test_a_far_date_in_a_rooming_list_row_refuses_that_row(api, ctx):
    from tests.factories import make_hotel

    h = make_hotel(ctx, rooms=2)
    base = f"/v1/properties/{h.property.id}"
    block = api.post(f"{base}/blocks", {
        "code": "FAR", "name": "Far", "arrival_date": "2030-01-03",
        "departure_date": "2030-01-05", "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": "2030-01-03",
                        "to_date": "2030-01-04", "allotted": 1}]}).json
    row = {"room_type_id": str(h.room_type.id), "arrival_date": "2030-01-03",
           "departure_date": "9999-12-31", "guest": {"last_name": "Far"}}
    dry = api.post(f"{base}/blocks/{block['id']}/rooming-list", {"rows": [row],
                                                                  "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json["rows"][0]["code"] == "date_out_of_range"
