"""The admin surface: page definitions from the registry, admin lists with keyset
paging and an estimated total, and submit aliases that are the domain routes' own responders."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest

from pms.api import admin, admin_pages
from pms.context import Ctx
from pms.db.uow import read_scope
from pms.devkeys import all_scopes, mint_token
from pms.models import AuditEntry, OutboxEvent
from pms.routes import all_routes, operations
from tests.api.recipes import World
from tests.helpers import assert_problem, owned_method, random_ref

P = "/v1/properties/{property_id}"


@pytest.mark.parametrize("page", sorted(admin_pages.PAGES))
def test_every_page_has_a_definition_with_its_data_url(api, page):
    resp = api.get(f"/v1/admin/ui/{page}")
    assert resp.status_code == 200, resp.text
    body = resp.json
    assert body["page"] == page and body["data_url"] == f"/v1/admin/{page}"
    assert body["list_columns"][0] == "id"
    data = api.get(body["data_url"])
    assert data.status_code == 200, data.text
    assert set(data.json) == {"data", "next_cursor", "estimated_total"}


def test_the_spec_pages_are_all_there():
    spec_pages = {"reservations", "frontdesk", "housekeeping", "rates", "blocks", "events",
                  "profiles", "reports", "settings", "companies", "company_users",
                  "negotiated_rates", "kiosk-config", "corporate-accounts"}
    assert spec_pages <= set(admin_pages.PAGES)
    # SPEC: the submit aliases also cover company_payment_methods, company_users, rate_links
    resources = {alias.split("/")[3] for alias, _spec in admin.alias_table(all_routes()).values()}
    assert {"company_payment_methods", "company_users", "rate_links", "blocks"} <= resources


def test_unknown_page_is_404(api):
    assert_problem(api.get("/v1/admin/ui/nope"), 404)


def test_form_schema_is_generated_from_the_request_schema_with_x_lov(api):
    body = api.get("/v1/admin/ui/reservations").json
    from pms.schemas.reservations import ReservationIn

    generated = msgspec.json.schema(ReservationIn)
    name = generated["$ref"].rsplit("/", 1)[-1]
    expected = generated["$defs"][name]
    schema = body["schema"]
    assert set(schema["properties"]) == set(expected["properties"])
    assert schema.get("required") == expected.get("required")
    assert schema["properties"]["room_type_id"]["x-lov"] == "room-types"
    assert schema["properties"]["source"]["x-lov"] == "reservation-sources"
    # every x-lov names a list the LOV route serves
    from pms.services.catalog import lov

    for page in admin_pages.PAGES.values():
        assert set(page.lovs.values()) <= set(lov.list_names()), page.page
    controls = [e["scope"] for row in body["ui_schema"]["elements"] for e in row["elements"]]
    assert sorted(controls) == sorted(f"#/properties/{f}" for f in schema["properties"])


def test_actions_carry_scope_alias_path_and_allowed_states(api):
    body = api.get("/v1/admin/ui/reservations").json
    actions = {a["name"]: a for a in body["actions"]}
    cancel = actions["cancel"]
    assert cancel["method"] == "POST"
    assert cancel["path"] == "/v1/admin/reservations" + P.removeprefix("/v1") \
        + "/reservations/{id}/cancel"
    assert cancel["scope"] == "hotel:pms:reservations:write"
    assert cancel["allowed_from"] == ["CONFIRMED"]
    assert actions["create"]["allowed_from"] is None


def test_actions_are_filtered_by_the_callers_scopes(api):
    token = mint_token(api.settings, env_id=api.env_id,
                       scopes=["hotel:pms:admin", "hotel:pms:reservations:read",
                               "hotel:pms:frontdesk:write"])
    body = api.get("/v1/admin/ui/reservations", token=token).json
    assert body["actions"] == []
    desk = api.get("/v1/admin/ui/frontdesk", token=token).json
    assert {a["name"] for a in desk["actions"]} == {"check_in", "check_out", "no_show",
                                                     "assign_room", "move_room", "issue_key"}


def test_every_offered_action_is_one_the_api_accepts_from_the_scopes():
    """A page never offers what the API would refuse: each action's alias is a served route
    whose declared scope is the one the definition names."""
    served = {(m, p): s for m, p, _f, s in operations(all_routes())}
    table = admin.action_table(all_routes())
    for page in admin_pages.PAGES.values():
        for action in page.actions:
            alias, spec = table[(action.method, action.path)]
            assert (action.method, alias) in served
            assert served[(action.method, alias)].scope == spec.scope
            if alias == action.path:  # an admin route (policy sets): served as it is
                assert alias.startswith("/v1/admin/")
                assert (action.method, alias) not in admin.alias_table(all_routes())
                continue
            resource = alias.split("/")[3]
            assert spec.scope == f"hotel:pms:{resource}:write"


def test_page_definitions_need_the_admin_scope(api):
    token = mint_token(api.settings, env_id=api.env_id,
                       scopes=[s for s in all_scopes() if s != "hotel:pms:admin"])
    assert_problem(api.get("/v1/admin/ui/reservations", token=token), 403)


def test_admin_list_needs_the_pages_read_scope(api):
    token = mint_token(api.settings, env_id=api.env_id,
                       scopes=["hotel:pms:admin", "hotel:pms:kiosk:read"])
    assert api.get("/v1/admin/kiosk-config", token=token).status_code == 200
    assert_problem(api.get("/v1/admin/profiles", token=token), 403)


def test_admin_list_pages_by_keyset_with_an_estimate_and_stays_in_its_env(api):
    world = World(api)
    for _ in range(3):
        world._post(world.fill(f"{P}/rate-plans"), {"code": random_ref("RP"), "name": "X"})
    first = api.get("/v1/admin/rates", params={"limit": 2, "property_id": world.property_id})
    assert first.status_code == 200, first.text
    assert len(first.json["data"]) == 2 and first.json["next_cursor"]
    assert first.json["estimated_total"] >= 2
    second = api.get("/v1/admin/rates", params={"limit": 2, "property_id": world.property_id,
                                                 "cursor": first.json["next_cursor"]})
    ids = [r["id"] for r in first.json["data"] + second.json["data"]]
    assert len(ids) == len(set(ids)) == 4
    other = api.for_env(uuid.uuid4())
    assert other.get("/v1/admin/rates").json["data"] == []
    assert other.get("/v1/admin/profiles").json["data"] == []


def test_admin_list_filters_and_refuses_bad_input(api):
    world = World(api)
    code = random_ref("RP")
    world._post(world.fill(f"{P}/rate-plans"), {"code": code, "name": "X"})
    rows = api.get("/v1/admin/rates", params={"code": code}).json["data"]
    assert [r["code"] for r in rows] == [code]
    assert_problem(api.get("/v1/admin/rates", params={"cursor": "garbage!"}), 422)
    assert_problem(api.get("/v1/admin/rates", params={"limit": 0}), 422)
    assert_problem(api.get("/v1/admin/profiles", params={"property_id": world.property_id}),
                   422)


def _trail(api: Any, request_id: str) -> tuple[list[Any], list[Any]]:
    with read_scope(Ctx(env_id=api.env_id)):
        events = [(e.type, e.aggregate_type, e.aggregate_version, _shape(e.data))
                  for e in OutboxEvent.select().where(OutboxEvent.request_id == request_id)]
        audits = [(a.action, a.target_type, a.actor_sub, _shape(a.before), _shape(a.after))
                  for a in AuditEntry.select().where(AuditEntry.request_id == request_id)]
    return events, audits


# last4: the two rows are two cards, whose last digits the payments service reports apart
VOLATILE = {"id", "code", "created_at", "updated_at", "payment_method_id", "last4", "time"}


def _shape(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: ("*" if k in VOLATILE else _shape(v)) for k, v in data.items()}
    return data


def _both(api: Any, method: str, domain_url: str, bodies: tuple[Any, Any]) -> list[Any]:
    alias_prefix = None
    for (m, path), (alias, _s) in admin.alias_table(all_routes()).items():
        if m == method and _matches(path, domain_url):
            alias_prefix = alias[: len(alias) - len(path.removeprefix("/v1"))]
    assert alias_prefix
    out = []
    for url, body in ((domain_url, bodies[0]),
                      (alias_prefix + domain_url.removeprefix("/v1"), bodies[1])):
        rid = "req-" + uuid.uuid4().hex[:12]
        resp = api.request(method, url, json=body, headers={"X-Platform-Request-Id": rid})
        assert 200 <= resp.status_code < 300, (url, resp.text)
        out.append((resp.status_code, _shape(resp.json), *_trail(api, rid)))
    return out


def _matches(template: str, url: str) -> bool:
    t, u = template.split("/"), url.split("/")
    return len(t) == len(u) and all(a == b or a.startswith("{") for a, b in zip(t, u, strict=True))


def test_alias_and_domain_route_make_the_same_rows_events_and_audit(api):
    world = World(api)
    domain, alias = _both(api, "POST", world.fill(f"{P}/rate-plans"),
                          ({"code": random_ref("RP"), "name": "Same"},
                           {"code": random_ref("RP"), "name": "Same"}))
    assert domain == alias
    assert domain[2] and domain[3]  # one event and one audit row each


def test_company_payment_method_alias_matches_its_domain_route(api):
    world = World(api)
    company = world._post(world.fill(f"{P}/profiles"),
                          {"kind": "COMPANY", "company_name": "Acme " + random_ref("c")})["id"]
    url = world.fill(f"{P}/companies/{{profile_id}}/payment-methods", {"profile_id": company})
    refs = [owned_method(company) for _ in range(2)]
    domain, alias = _both(api, "POST", url, ({"payment_method_id": refs[0], "label": "Amex"},
                                              {"payment_method_id": refs[1], "label": "Amex"}))
    assert domain == alias
    # the page lists both, the domain route's and the alias's, as the approvals' rows
    rows = api.get("/v1/admin/corporate-accounts",
                   params={"company_profile_id": company}).json["data"]
    assert sorted((r["payment_method_id"], r["status"]) for r in rows) == [
        (ref, "PENDING") for ref in sorted(refs)]


def test_rate_links_alias_matches_its_domain_route(api):
    world = World(api)
    plan = world._post(world.fill(f"{P}/rate-plans"), {"code": random_ref("NG"),
                                                       "name": "Corp", "negotiated": True})
    answers = []
    for prefix in ("/v1", "/v1/admin/rate_links"):
        company = world._post(world.fill(f"{P}/profiles"),
                              {"kind": "COMPANY", "company_name": "Acme " + random_ref("c")})
        url = prefix + world.fill(f"{P}/companies/{{profile_id}}/rate-links",
                                  {"profile_id": company["id"]}).removeprefix("/v1")
        rid = "req-" + uuid.uuid4().hex[:12]
        resp = api.put(url, {"rate_plan_ids": [plan["id"]]},
                       headers={"X-Platform-Request-Id": rid})
        assert resp.status_code == 200, (url, resp.text)
        body = {k: v for k, v in resp.json.items() if k != "company_profile_id"}
        events, audits = _trail(api, rid)
        answers.append((body, [e[:3] for e in events], [a[:3] for a in audits]))
    assert answers[0] == answers[1]
    assert answers[0][1] == [("hotel:pms:company:rate_links_updated", "company", 2)]
    assert answers[0][0]["rate_plan_ids"] == [plan["id"]]


def test_aliases_are_closed_to_holder_sessions(api):
    world = World(api)
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=world.profile_id)
    url = "/v1/admin/profiles" + world.fill(f"{P}/profiles").removeprefix("/v1")
    resp = api.post(url, {"last_name": "X"}, token=token)
    assert_problem(resp, 403)
    assert resp.json["code"] == "guest_not_allowed"
