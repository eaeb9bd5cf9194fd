"""Policy administration: policy sets, relations and attributes through the API, the
route gate consulting them after the scope check, on SQLite and PostgreSQL; a new deny holding
on a second app instance at its next request with no relay running (PostgreSQL); no policy
lifting tenant isolation."""

from __future__ import annotations

import uuid
from typing import Any

import falcon.testing
import pytest

from pms.app import create_app
from pms.context import Ctx
from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import CompanyUser, OutboxEvent, PolicyRelation
from tests.conftest import Api
from tests.helpers import assert_problem, audit_actions, outbox_types, random_ref

A = "/v1/admin"


def _property(api: Any) -> str:
    resp = api.post("/v1/properties", {"propertyCode": random_ref("PO").upper(),
                                       "timezone": "UTC", "currencyCode": "EUR"})
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def _policy(api: Any, *rules: dict[str, Any], name: str | None = None,
            default_effect: str = "allow") -> dict[str, Any]:
    resp = api.post(f"{A}/policy-sets", {"name": name or random_ref("ps"), "rules": list(rules),
                                         "default_effect": default_effect})
    assert resp.status_code == 201, resp.text
    return resp.json


def _ctx(api: Any) -> Ctx:
    return Ctx(env_id=api.env_id)


# -- CRUD, events and audit -------------------------------------------------------------------

def test_policy_set_crud_writes_events_audit_rows_and_stays_in_its_env(api):
    created = _policy(api, {"effect": "deny", "scopes": ["hotel:pms:rates:write"]})
    path = f"{A}/policy-sets/{created['id']}"
    assert api.get(path).json["rules"][0]["effect"] == "deny"
    changed = api.put(path, {"name": created["name"], "enabled": False, "rules": []},
                      headers={"If-Match": f'"{created["version"]}"'})
    assert changed.status_code == 200, changed.text
    assert changed.json["enabled"] is False and changed.json["version"] == 2
    assert [p["id"] for p in api.get(f"{A}/policy-sets").json["data"]] == [created["id"]]
    assert_problem(api.for_env(uuid.uuid4()).get(path), 404)
    assert api.for_env(uuid.uuid4()).get(f"{A}/policy-sets").json["data"] == []
    assert api.delete(path).status_code == 204
    assert_problem(api.get(path), 404)
    ctx = _ctx(api)
    assert outbox_types(ctx) == ["hotel:pms:policy_set:created", "hotel:pms:policy_set:updated",
                                 "hotel:pms:policy_set:deleted"]
    assert audit_actions(ctx) == ["policy_set.created", "policy_set.updated",
                                  "policy_set.deleted"]


def test_policy_set_names_are_unique_and_bodies_carry_no_env(api):
    created = _policy(api)
    assert_problem(api.post(f"{A}/policy-sets", {"name": created["name"]}), 409)
    assert_problem(api.post(f"{A}/policy-sets", {"name": "x", "env_id": str(uuid.uuid4())}),
                   422)
    assert_problem(api.post(f"{A}/policy-sets", {"name": "x", "rules": [
        {"effect": "allow", "scopes": ["*"], "env_id": str(uuid.uuid4())}]}), 422)
    assert_problem(api.post(f"{A}/policy-sets", {"name": "x", "rules": [
        {"effect": "maybe", "scopes": ["*"]}]}), 422)


def test_policy_administration_needs_admin_and_the_policy_scope(api):
    no_admin = mint_token(api.settings, env_id=api.env_id,
                          scopes=["hotel:pms:policy:read", "hotel:pms:policy:write"])
    read_only = mint_token(api.settings, env_id=api.env_id,
                           scopes=["hotel:pms:admin", "hotel:pms:policy:read"])
    for path in ("policy-sets", "relations", "attributes"):
        assert_problem(api.get(f"{A}/{path}", token=no_admin), 403, "missing_scope")
        assert api.get(f"{A}/{path}", token=read_only).status_code == 200
    assert_problem(api.post(f"{A}/policy-sets", {"name": "x"}, token=read_only), 403,
                   "missing_scope")
    guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(uuid.uuid4()))
    assert_problem(api.get(f"{A}/policy-sets", token=guest), 403, "guest_not_allowed")


def test_attribute_crud_writes_events_and_audit_rows(api):
    body = {"target_kind": "subject", "target_id": "user:ann", "name": "team", "value": "desk"}
    created = api.post(f"{A}/attributes", body)
    assert created.status_code == 201, created.text
    assert_problem(api.post(f"{A}/attributes", body), 409)
    path = f"{A}/attributes/{created.json['id']}"
    assert api.put(path, {"value": "night"}).json["value"] == "night"
    listed = api.get(f"{A}/attributes", params={"target_id": "user:ann"}).json["data"]
    assert [(a["name"], a["value"]) for a in listed] == [("team", "night")]
    assert api.delete(path).status_code == 204
    assert audit_actions(_ctx(api)) == ["policy_attribute.created", "policy_attribute.updated",
                                        "policy_attribute.deleted"]
    assert_problem(api.get(path), 404)


# -- relations --------------------------------------------------------------------------------

def _company_and_traveler(api: Any, prop: str) -> tuple[str, str]:
    company = api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]
    traveler = api.post(f"/v1/properties/{prop}/profiles", {
        "first_name": "Tia", "last_name": "Traveler",
        "email": f"{random_ref('t')}@example.com"}).json["id"]
    return company, traveler


def test_a_company_admin_relation_is_the_company_user_binding_itself(api):
    prop = _property(api)
    company, traveler = _company_and_traveler(api, prop)
    made = api.post(f"{A}/relations", {"subject": f"profile:{traveler}", "relation": "ADMIN",
                                       "object": f"company:{company}", "property_id": prop})
    assert made.status_code == 201, made.text
    assert made.json["source"] == "company_user"
    # one record: the binding, listed by the company routes and here, with the same id
    users = api.get(f"/v1/properties/{prop}/companies/{company}/users").json["data"]
    assert [(u["id"], u["role"]) for u in users] == [(made.json["id"], "ADMIN")]
    listed = api.get(f"{A}/relations", params={"object": f"company:{company}"}).json["data"]
    assert [(r["id"], r["subject"], r["relation"]) for r in listed] == [
        (made.json["id"], f"profile:{traveler}", "ADMIN")]
    with read_scope(_ctx(api)):
        assert PolicyRelation.select().count() == 0
        assert CompanyUser.select().where(CompanyUser.company_profile_id == company).count() == 1
    assert outbox_types(_ctx(api))[-1] == "hotel:pms:company_user:added"
    # the company-user service's own rules hold: the last ADMIN stays
    path = f"{A}/relations/{made.json['id']}"
    assert_problem(api.delete(path), 422)
    assert_problem(api.delete(path, params={"property_id": prop}), 409, "last_company_admin")


def test_a_company_binding_added_by_the_company_route_is_shown_as_a_relation(api):
    prop = _property(api)
    company, traveler = _company_and_traveler(api, prop)
    bound = api.post(f"/v1/properties/{prop}/companies/{company}/users",
                     {"traveler_profile_id": traveler, "role": "BOOKER"}).json
    shown = api.get(f"{A}/relations/{bound['id']}").json
    assert (shown["subject"], shown["relation"], shown["object"], shown["source"]) == (
        f"profile:{traveler}", "BOOKER", f"company:{company}", "company_user")
    assert api.delete(f"{A}/relations/{bound['id']}", params={"property_id": prop}
                      ).status_code == 204
    assert api.get(f"/v1/properties/{prop}/companies/{company}/users").json["data"] == []


def test_own_relations_crud_and_paging_over_both_sources(api):
    prop = _property(api)
    company, traveler = _company_and_traveler(api, prop)
    api.post(f"/v1/properties/{prop}/companies/{company}/users",
             {"traveler_profile_id": traveler, "role": "VIEWER"})
    ids = []
    for n in range(3):
        made = api.post(f"{A}/relations", {"subject": f"user:u{n}", "relation": "staff",
                                           "object": f"property:{prop}"})
        assert made.status_code == 201, made.text
        assert made.json["source"] == "policy"
        ids.append(made.json["id"])
    assert_problem(api.post(f"{A}/relations", {"subject": "user:u0", "relation": "staff",
                                               "object": f"property:{prop}"}), 409)
    seen, cursor = [], None
    while True:
        page = api.get(f"{A}/relations", params={"limit": 2, **({"cursor": cursor}
                                                                 if cursor else {})}).json
        seen += [r["id"] for r in page["data"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 4
    assert api.delete(f"{A}/relations/{ids[0]}").status_code == 204
    assert "hotel:pms:policy_relation:deleted" in outbox_types(_ctx(api))
    assert_problem(api.get(f"{A}/relations/{ids[0]}"), 404)


# -- evaluation -------------------------------------------------------------------------------

def test_a_deny_by_property_refuses_there_and_only_there(api):
    here, there = _property(api), _property(api)
    assert api.get(f"/v1/properties/{here}/rate-plans").status_code == 200
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:rates:read"], "property_ids": [here]})
    assert_problem(api.get(f"/v1/properties/{here}/rate-plans"), 403, "policy_denied")
    assert api.get(f"/v1/properties/{there}/rate-plans").status_code == 200
    assert api.get(f"/v1/properties/{here}/room-types").status_code == 200  # another scope


def test_allow_rules_narrow_a_scope_and_deny_overrides_allow(api):
    prop = _property(api)
    url = f"/v1/properties/{prop}/room-types"
    machine = mint_token(api.settings, env_id=api.env_id, client_kind="machine")
    _policy(api, {"effect": "allow", "scopes": ["hotel:pms:properties:*"],
                  "client_kinds": ["machine"]}, default_effect="deny")
    assert api.get(url, token=machine).status_code == 200
    assert_problem(api.get(url), 403, "policy_denied")  # a user token: no allow matches
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:properties:read"],
                  "client_kinds": ["machine", "user"]})
    assert_problem(api.get(url, token=machine), 403, "policy_denied")


def test_a_policy_never_widens_the_tokens_scopes(api):
    prop = _property(api)
    _policy(api, {"effect": "allow", "scopes": ["*"]})
    narrow = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:properties:read"])
    assert_problem(api.get(f"/v1/properties/{prop}/rate-plans", token=narrow), 403,
                   "missing_scope")


def test_subject_and_property_attributes_are_read_by_rules(api):
    prop, other = _property(api), _property(api)
    _policy(api, {"effect": "allow", "scopes": ["hotel:pms:rates:read"],
                  "subject_attributes": {"team": "revenue"}},
            {"effect": "deny", "scopes": ["hotel:pms:rates:read"],
             "property_attributes": {"frozen": "yes"}}, default_effect="deny")
    assert_problem(api.get(f"/v1/properties/{prop}/rate-plans"), 403, "policy_denied")
    api.post(f"{A}/attributes", {"target_kind": "subject", "target_id": "user:dev-user",
                                 "name": "team", "value": "revenue"})
    assert api.get(f"/v1/properties/{prop}/rate-plans").status_code == 200
    api.post(f"{A}/attributes", {"target_kind": "property", "target_id": prop,
                                 "name": "frozen", "value": "yes"})
    assert_problem(api.get(f"/v1/properties/{prop}/rate-plans"), 403, "policy_denied")
    assert api.get(f"/v1/properties/{other}/rate-plans").status_code == 200


def test_a_relation_condition_reads_the_tuple_and_the_company_binding(api):
    prop = _property(api)
    rule = {"effect": "allow", "scopes": ["hotel:pms:rates:read"],
            "relation": {"relation": "staff", "object": "property"}}
    _policy(api, rule, default_effect="deny")
    assert_problem(api.get(f"/v1/properties/{prop}/rate-plans"), 403, "policy_denied")
    api.post(f"{A}/relations", {"subject": "user:dev-user", "relation": "staff",
                                "object": f"property:{prop}"})
    assert api.get(f"/v1/properties/{prop}/rate-plans").status_code == 200
    # a traveler's company role, read from its binding
    company, traveler = _company_and_traveler(api, prop)
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:company_users:read"],
                  "relation": {"relation": "VIEWER", "object": "company"}})
    token = mint_token(api.settings, env_id=api.env_id, holder_id=traveler)
    users = f"/v1/properties/{prop}/companies/{company}/users"
    api.post(users, {"traveler_profile_id": traveler, "role": "BOOKER"})
    assert api.get(users, token=token).status_code == 200
    binding = api.get(users).json["data"][0]["id"]
    api.delete(f"{users}/{binding}")
    api.post(users, {"traveler_profile_id": traveler, "role": "VIEWER"})
    assert_problem(api.get(users, token=token), 403, "policy_denied")


def test_policies_cannot_lock_out_policy_administration_and_disabled_sets_do_nothing(api):
    prop = _property(api)
    deny_all = _policy(api, {"effect": "deny", "scopes": ["*"]})
    assert_problem(api.get(f"/v1/properties/{prop}/rate-plans"), 403, "policy_denied")
    path = f"{A}/policy-sets/{deny_all['id']}"
    assert api.get(f"{A}/policy-sets").status_code == 200
    assert api.put(path, {"name": deny_all["name"], "enabled": False,
                          "rules": deny_all["rules"]},
                   headers={"If-Match": f'"{deny_all["version"]}"'}).status_code == 200
    assert api.get(f"/v1/properties/{prop}/rate-plans").status_code == 200


# -- tenant isolation (SPEC Authentication 7) -------------------------------------------------

def test_no_policy_lifts_tenant_isolation(api):
    other = api.for_env(uuid.uuid4())
    foreign = _property(other)
    foreign_plan = other.post(f"/v1/properties/{foreign}/rate-plans",
                              {"code": random_ref("RP"), "name": "X"}).json["id"]
    # allow everything, naming the other env's property, its id as a subject and the wildcard
    _policy(api, {"effect": "allow", "scopes": ["*"], "property_ids": [foreign]},
            {"effect": "allow", "scopes": ["*"]},
            {"effect": "allow", "scopes": ["hotel:pms:*"],
             "subjects": [f"user:{other.env_id}"]})
    api.post(f"{A}/relations", {"subject": "user:dev-user", "relation": "owner",
                                "object": f"property:{foreign}"})
    assert_problem(api.get(f"/v1/properties/{foreign}"), 404)
    assert_problem(api.get(f"/v1/properties/{foreign}/rate-plans/{foreign_plan}"), 404)
    assert_problem(api.get(f"/v1/properties/{foreign}/rate-plans/{foreign_plan}",
                           env=other.env_id), 403, "tenant_mismatch")
    assert_problem(api.post(f"{A}/policy-sets", {"name": "x", "env_id": str(other.env_id)}),
                   422)
    # and the other env sees none of this env's policy rows
    assert other.get(f"{A}/policy-sets").json["data"] == []
    assert other.get(f"{A}/relations").json["data"] == []


# -- every host at once, without the relay (PostgreSQL) ----------------------------------------

@pytest.mark.postgres
def test_a_deny_written_on_one_instance_holds_on_another_at_its_next_request(
        base_settings, pg_db, clock, env_id):
    first = Api(falcon.testing.TestClient(create_app(base_settings, db=pg_db, clock=clock)),
                base_settings, env_id)
    second = Api(falcon.testing.TestClient(create_app(base_settings, db=pg_db, clock=clock)),
                 base_settings, env_id)
    prop = _property(first)
    url = f"/v1/properties/{prop}/rate-plans"
    _policy(first, {"effect": "allow", "scopes": ["hotel:pms:rates:read"]})
    assert second.get(url).status_code == 200  # the second instance has cached the policies
    _policy(first, {"effect": "deny", "scopes": ["hotel:pms:rates:read"],
                    "property_ids": [prop]})
    assert_problem(second.get(url), 403, "policy_denied")
    # no relay ran: the deny's event is still in the outbox, unpublished
    with read_scope(Ctx(env_id=env_id)):
        pending = OutboxEvent.select().where(OutboxEvent.type == "hotel:pms:policy_set:created",
                                             OutboxEvent.published_at.is_null()).count()
    assert pending == 2
