"""Every operation of the route table under a deny at property P (docs/guides/authorization.md):
a request that names P (in its path, or its query when the path names no property) is refused
with 403 `policy_denied`, and the same request under a set that allows the scope at P only is
not refused by policy (the control). An operation whose request names no property is refused
too (the deny could hold: fail closed), unless it lists rows across properties, where P's rows
are left out instead (tests/api/test_policy_decision.py shows the rows). Policy administration
is the one exemption: no policy locks its administrators out. Driven from the route table, as
the holder and kiosk matrices are, so a route added later is covered by construction."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from pms.api.route import openapi_path, responders
from pms.api.spec import spec_of
from pms.routes import all_routes
from tests.helpers import assert_problem, random_ref

A = "/v1/admin"
POLICY_PREFIX = "hotel:pms:policy:"
NOT_UUIDS = {"room_number": "101", "name": "arrivals", "list": "reservation-statuses",
             "page": "reservations"}


def _operations() -> list[tuple[str, str, str, bool]]:
    """(METHOD, path, the declared scope, lists rows across properties) per operation."""
    found = []
    for route in all_routes():
        for method, fn in responders(route):
            spec = spec_of(fn)
            assert spec is not None
            if getattr(route.resource, "outside_policy", False):
                continue  # health: asks the decision point nothing (tests/api/test_health.py)
            found.append((method, openapi_path(route.template), spec.scope,
                          bool(getattr(route.resource, "policy_rows", False))))
    return sorted(set(found))


OPERATIONS = _operations()
# served before authentication (no token, no tenant data): no caller to ask about
PUBLIC = {("GET", "/v1/openapi.json")}
GOVERNED = [op for op in OPERATIONS
            if not op[2].startswith(POLICY_PREFIX) and op[:2] not in PUBLIC]
UNPINNED = [op for op in GOVERNED if "{property_id}" not in op[1]]


def _url(path: str, prop: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: prop if m.group(1) == "property_id" else
                  NOT_UUIDS.get(m.group(1), str(uuid.uuid4())), path)


def _call(api: Any, method: str, path: str, prop: str, *, name_it: bool) -> Any:
    params = {"property_id": prop} if name_it and "{property_id}" not in path else None
    return api.request(method, _url(path, prop), params=params,
                       json={} if method in ("POST", "PUT", "PATCH") else None)


def _not_refused_by_policy(resp: Any) -> bool:
    if resp.status_code != 403:
        return True
    return resp.json.get("code") != "policy_denied"


def test_only_policy_administration_is_exempt():
    exempt = {(m, p) for m, p, scope, _rows in OPERATIONS if scope.startswith(POLICY_PREFIX)}
    assert exempt and all(p.startswith(f"{A}/") for _m, p in exempt), exempt
    assert len(GOVERNED) + len(exempt) + len(PUBLIC) == len(OPERATIONS)


@pytest.mark.parametrize("method,path,scope,rows", GOVERNED,
                         ids=[f"{m} {p}" for m, p, _s, _r in GOVERNED])
def test_a_deny_at_a_property_refuses_every_operation_that_names_it(api, method, path, scope,
                                                                    rows):
    prop = str(uuid.uuid4())
    made = api.post(f"{A}/policy-sets", {"name": random_ref("ps"), "rules": [
        {"id": "deny-p", "effect": "deny", "scopes": [scope], "property_ids": [prop]}]})
    assert made.status_code == 201, made.text
    refused = assert_problem(_call(api, method, path, prop, name_it=True), 403, "policy_denied")
    assert refused["rule_id"] == "deny-p"
    # the control: the same scope allowed at P only
    changed = api.put(f"{A}/policy-sets/{made.json['id']}", {
        "name": made.json["name"], "default_effect": "deny", "rules": [
            {"effect": "allow", "scopes": [scope], "property_ids": [prop]}]},
        headers={"If-Match": f'"{made.json["version"]}"'})
    assert changed.status_code == 200, changed.text
    resp = _call(api, method, path, prop, name_it=True)
    assert _not_refused_by_policy(resp), resp.text


@pytest.mark.parametrize("method,path,scope,rows", UNPINNED,
                         ids=[f"{m} {p}" for m, p, _s, _r in UNPINNED])
def test_a_request_naming_no_property_is_refused_or_filtered_under_a_property_deny(
        api, method, path, scope, rows):
    prop = str(uuid.uuid4())
    before = _call(api, method, path, prop, name_it=False)
    assert _not_refused_by_policy(before), before.text  # the control: no policy yet
    made = api.post(f"{A}/policy-sets", {"name": random_ref("ps"), "rules": [
        {"effect": "deny", "scopes": [scope], "property_ids": [prop]}]})
    assert made.status_code == 201, made.text
    resp = _call(api, method, path, prop, name_it=False)
    if rows and not _refuses_whole(path):
        assert _not_refused_by_policy(resp), resp.text  # its rows are filtered instead
    else:
        assert_problem(resp, 403, "policy_denied")


def _refuses_whole(path: str) -> bool:
    """Admin lists whose rows have no property: refused whole under a property rule."""
    from pms.api.admin_pages import PAGES
    from pms.services.admin.admin_lists import ListSource

    name = path.removeprefix(f"{A}/")
    page = PAGES.get(name)
    return (page is not None and isinstance(page.source, ListSource)
            and page.source.property_field is None)


def test_only_health_stands_outside_policy():
    # a resource outside policy asks the decision point nothing: the exemption must not spread
    outside = {openapi_path(r.template) for r in all_routes()
               if getattr(r.resource, "outside_policy", False)}
    assert outside == {"/v1/health"}
