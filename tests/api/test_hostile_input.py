"""Hostile input gets a clear 4xx problem+json, never a 5xx (CONTRACT §3), on both databases:
NUL characters anywhere, JSON nested 1,000 levels deep, money that is not a decimal string or
has more places than its currency, card-like numbers that are no cards, and the result of an
unfinished job. Route-wide tests are driven by the route table and the recipes, so a new route
cannot skip them. (Through a real gunicorn: tests/ops/test_hostile_http.py.)
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import pytest

from pms.api.jsonmedia import MAX_DEPTH
from pms.routes import all_routes, operations
from pms.schemas.money import EACH, money_paths
from tests.api.recipes import RECIPES, World
from tests.helpers import assert_problem

NUL = "\u0000"
OPERATIONS = [(m, p, spec) for m, p, _fn, spec in operations(all_routes())]


def _string_leaves(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items()
                for leaf in _string_leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _string_leaves(v, f"{path}[{i}]")]
    return [path] if isinstance(value, str) else []


def _with_suffix(body: Any, leaf: str, suffix: str) -> Any:
    out = copy.deepcopy(body)
    node, parts = out, leaf.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    key: Any = int(last) if isinstance(node, list) else last
    node[key] = node[key] + suffix
    return out


# -- NUL ------------------------------------------------------------------------------------------

TEXT_ROUTES = sorted({(m, p) for m, p, spec in OPERATIONS if spec.body is not None
                      and (m, p) in RECIPES})


@pytest.mark.parametrize("method,path", TEXT_ROUTES, ids=[f"{m} {p}" for m, p in TEXT_ROUTES])
def test_nul_in_any_text_field_is_422_naming_the_field(api, method, path):
    world = World(api)
    url, body = RECIPES[(method, path)](world)
    leaves = _string_leaves(body) if isinstance(body, dict) else []
    if not leaves:
        pytest.skip("the recipe's body has no text field")
    for leaf in leaves:
        resp = api.request(method, url, json=_with_suffix(body, leaf, f"x{NUL}y"))
        problem = assert_problem(resp, 422)
        assert [e["field"] for e in problem["errors"]] == [leaf], problem


@pytest.mark.parametrize("path, body, field", [
    ("{p}/profiles", {"first_name": "Ada", "last_name": "L", "address": {"line1": f"a{NUL}"}},
     "address.line1"),
    ("{p}/profiles", {"first_name": "Ada", "preferences": {"sso_provider": NUL}},
     "preferences.sso_provider"),
    ("{p}/room-types", {"code": "NUL1", "name": "Double", "description": f"sea{NUL}view"},
     "description"),
    ("{p}/profiles", {"first_name": "Ada", f"ev{NUL}il": "x"}, "ev\\u0000il"),
])
def test_nul_in_nested_text_and_keys_is_422_naming_the_field(api, path, body, field):
    world = World(api)
    problem = assert_problem(api.post(path.format(p=world.base), body), 422)
    assert [e["field"] for e in problem["errors"]] == [field]


def test_nul_in_a_query_string_or_path_is_422(api):
    world = World(api)
    problem = assert_problem(api.get(f"{world.base}/profiles", params={"q": f"Ada{NUL}"}), 422)
    assert problem["errors"][0]["field"] == "q"
    assert_problem(api.get(f"{world.base}/housekeeping/R%00"), 422)


# -- depth ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("opener, closer", [("[", "]"), ('{"a":', "}")])
def test_json_nested_1000_levels_is_400_json_too_deep(api, opener, closer):
    world = World(api)
    raw = (opener * 1000 + "1" + closer * 1000).encode()
    for path in (f"{world.base}/room-types", "/v1/properties"):
        resp = api.post(path, body=raw, headers={"Content-Type": "application/json",
                                                 "Idempotency-Key": uuid.uuid4().hex})
        problem = assert_problem(resp, 400, "json_too_deep")
        assert problem["max_depth"] == MAX_DEPTH


def test_json_at_the_depth_limit_reaches_the_schema(api):
    world = World(api)
    deep: Any = "x"
    for _ in range(MAX_DEPTH - 1):
        deep = {"a": deep}
    resp = api.post(f"{world.base}/room-types", {"code": "DEEP", "name": "x", "extra": deep})
    assert_problem(resp, 422, "validation_failed")  # an unknown field, not a depth refusal


# -- money ----------------------------------------------------------------------------------------

MONEY_ROUTES = sorted((m, p) for m, p, spec in OPERATIONS
                      if spec.body is not None and money_paths(spec.body) and (m, p) in RECIPES)
BAD_MONEY = ['"Infinity"', '"NaN"', '"1E+400"', '"1e30"', '"1_000"', '" 1.00"', '"-1.00"',
             "1.5", "10", "1E+400", "1e30", '"123456789.00"']


def _put_money(body: Any, steps: tuple[Any, ...], marker: str) -> tuple[Any, str]:
    """The body with `marker` at the money field's path (containers made as needed), and the
    field's path as the API names it."""
    out = copy.deepcopy(body) if isinstance(body, dict) else {}
    node, names = out, []
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if step is EACH:
            if not node:
                pytest.skip("no item in the recipe to put money into")
            node, names = node[0], [*names[:-1], f"{names[-1]}[0]"]
            continue
        names.append(step)
        if last:
            node[step] = marker
        else:
            node = node.setdefault(step, {"fee_type": "FIXED"} if "policy" in step else {})
    return out, ".".join(names)


@pytest.mark.parametrize("method,path", MONEY_ROUTES, ids=[f"{m} {p}" for m, p in MONEY_ROUTES])
def test_money_must_be_a_finite_decimal_string_everywhere(api, method, path):
    spec = next(s for m, p, s in OPERATIONS if (m, p) == (method, path))
    world = World(api)
    url, body = RECIPES[(method, path)](world)
    for steps, _signed in money_paths(spec.body):
        for bad in BAD_MONEY:
            with_marker, field = _put_money(body, steps, "@@MONEY@@")
            raw = json.dumps(with_marker).replace('"@@MONEY@@"', bad).encode()
            resp = api.request(method, url, body=raw,
                               headers={"Content-Type": "application/json"})
            problem = assert_problem(resp, 422)
            assert field in [e["field"] for e in problem["errors"]], (bad, problem)


def test_card_payment_of_a_fraction_of_a_cent_is_422_not_captured_as_zero(api):
    world = World(api)
    url, _ = RECIPES[("POST", "/v1/properties/{property_id}/folios/{id}/payments")](world)
    before = api.get(url.rsplit("/payments", 1)[0]).json
    resp = api.post(url, {"amount": "0.004", "method": "CARD", "payment_method_id": "pm_card_visa"})
    problem = assert_problem(resp, 422)
    assert problem["errors"][0]["field"] == "amount"
    after = api.get(url.rsplit("/payments", 1)[0]).json
    assert after["payments"] == before["payments"]


def test_item_price_with_more_places_than_its_currency_is_422(api):
    world = World(api)
    resp = api.post(f"{world.base}/items", {"code": "TINY", "name": "Mint", "category": "other",
                                            "price": "0.004"})
    assert_problem(resp, 422)
    ok = api.post(f"{world.base}/items", {"code": "TINY", "name": "Mint", "category": "other",
                                          "price": "0.0400"})
    assert ok.status_code == 201 and ok.json["price"] == "0.04"


# -- card guard -----------------------------------------------------------------------------------

def test_all_zero_floor_is_no_card_number(api):
    world = World(api)
    resp = api.post(f"{world.base}/rooms", {"room_number": "Z1", "room_type_id": world.room_type_id,
                                            "floor": "0000000000000000"})
    assert resp.status_code == 201, resp.text


# -- jobs -----------------------------------------------------------------------------------------

def test_result_of_an_unfinished_job_is_409_problem_json(api):
    world = World(api)
    url, body = RECIPES[("POST", "/v1/properties/{property_id}/end-of-day")](world)
    started = api.post(url, body)
    assert started.status_code == 202, started.text  # queued: no relay runs in API tests
    problem = assert_problem(api.get(f"/v1/jobs/{started.json['id']}/result"), 409,
                             "job_not_finished")
    assert problem["status"] == 409 and problem["job_status"] == started.json["status"]


# -- sizes ----------------------------------------------------------------------------------------

def _unbounded(info: Any, path: str, seen: set[Any]) -> list[str]:
    import msgspec.inspect as mi

    if isinstance(info, mi.Metadata):
        return _unbounded(info.type, path, seen)
    if isinstance(info, mi.StrType):
        return [path] if info.max_length is None and info.pattern is None else []
    if isinstance(info, (mi.ListType, mi.SetType, mi.VarTupleType, mi.DictType)):
        own = [path] if info.max_length is None else []
        item = info.value_type if isinstance(info, mi.DictType) else info.item_type
        return own + _unbounded(item, f"{path}[]", seen)
    if isinstance(info, mi.UnionType):
        return [p for t in info.types for p in _unbounded(t, path, seen)]
    if isinstance(info, mi.StructType) and info.cls not in seen:
        return [p for f in info.fields
                for p in _unbounded(f.type, f"{path}.{f.encode_name}", seen | {info.cls})]
    return []


def test_every_request_string_and_list_has_a_maximum_size():
    import msgspec.inspect as mi

    found = sorted({f"{m} {p}: {t.__name__}{field}"
                    for m, p, spec in OPERATIONS for t in (spec.body, spec.query) if t is not None
                    for field in _unbounded(mi.type_info(t), "", set())})
    assert not found, "give these a max_length (or a pattern):\n" + "\n".join(found)
