"""One policy decision for every entry point (docs/guides/authorization.md): the target is
resolved wherever the request names it (path, query, body), a deny the request does not pin
down refuses or hides the rows it governs, kiosk actions are judged on the kiosk scope too,
configuration bundles and company roles need their sections' and resources' scopes; policy
administration refuses rules that can never match, replaces a set only with its version,
explains a decision and names the rule that refused; bodies are read after the scope check."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from pms.devkeys import mint_token
from tests.factories import make_booking_hotel, make_reservation
from tests.helpers import assert_problem, random_ref

A = "/v1/admin"
RES_READ = "hotel:pms:reservations:read"


def _policy(api: Any, *rules: dict[str, Any], default_effect: str = "allow") -> dict[str, Any]:
    resp = api.post(f"{A}/policy-sets", {"name": random_ref("ps"), "rules": list(rules),
                                         "default_effect": default_effect})
    assert resp.status_code == 201, resp.text
    return resp.json


def _token(api: Any, *scopes: str, **kw: Any) -> str:
    return mint_token(api.settings, env_id=api.env_id, scopes=list(scopes), **kw)


def _two_hotels(api: Any, ctx: Any) -> tuple[Any, Any]:
    here, there = make_booking_hotel(ctx, rooms=2), make_booking_hotel(ctx, rooms=2)
    make_reservation(ctx, here)
    make_reservation(ctx, there)
    return here, there


def _listed_properties(resp: Any) -> set[str]:
    assert resp.status_code == 200, resp.text
    return {row["property_id"] for row in resp.json["data"]}


# -- the target, wherever the request names it ---------------------------------------------------

def test_a_deny_at_a_property_refuses_the_admin_list_that_names_it_and_hides_its_rows(api, ctx):
    here, there = _two_hotels(api, ctx)
    P, Q = str(here.id), str(there.id)
    assert _listed_properties(api.get(f"{A}/reservations")) >= {P, Q}
    made = _policy(api, {"id": "freeze-p", "effect": "deny", "scopes": [RES_READ],
                         "property_ids": [P]})
    assert_problem(api.get(f"/v1/properties/{P}/reservations"), 403, "policy_denied")
    refused = assert_problem(api.get(f"{A}/reservations", params={"property_id": P}), 403,
                             "policy_denied")
    assert (refused["policy_set_id"], refused["rule_id"]) == (made["id"], "freeze-p")
    assert _listed_properties(api.get(f"{A}/reservations")) == {Q}  # P's rows left out
    assert _listed_properties(api.get(f"{A}/reservations", params={"property_id": Q})) == {Q}


def test_an_allow_limited_to_a_property_lists_that_propertys_rows(api, ctx):
    here, there = _two_hotels(api, ctx)
    P, Q = str(here.id), str(there.id)
    _policy(api, {"effect": "allow", "scopes": [RES_READ], "property_ids": [P]},
            default_effect="deny")
    assert api.get(f"/v1/properties/{P}/reservations").status_code == 200
    assert_problem(api.get(f"/v1/properties/{Q}/reservations"), 403, "policy_denied")
    assert _listed_properties(api.get(f"{A}/reservations")) == {P}
    assert _listed_properties(api.get(f"{A}/reservations", params={"property_id": P})) == {P}


def test_lists_whose_rows_have_no_property_are_refused_under_a_property_deny(api, ctx):
    prop = make_booking_hotel(ctx, rooms=1)
    assert api.get(f"{A}/profiles").status_code == 200
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:profiles:read"],
                  "property_ids": [str(prop.id)]})
    assert_problem(api.get(f"{A}/profiles"), 403, "policy_denied")


def test_the_jobs_entry_reads_the_property_from_its_body(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    body = {"kind": "end_of_day", "property_id": str(hotel.id), "input": {"dry_run": True}}
    assert api.post("/v1/jobs", body).status_code in (200, 202)
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:eod:write"],
                  "property_ids": [str(hotel.id)]})
    assert_problem(api.post(f"/v1/properties/{hotel.id}/end-of-day", {"dry_run": True}), 403,
                   "policy_denied")
    assert_problem(api.post("/v1/jobs", body), 403, "policy_denied")
    other = make_booking_hotel(ctx, rooms=1)
    assert api.post("/v1/jobs", {**body, "property_id": str(other.id)}).status_code in (200, 202)


def test_settings_and_lists_of_values_read_the_property_from_the_query(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    P = str(hotel.id)
    assert api.get("/v1/settings/modules", params={"property_id": P}).status_code == 200
    assert api.get("/v1/lov/room-types", params={"parent": P}).status_code == 200
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:settings:*", "hotel:pms:lov:read"],
                  "property_ids": [P]})
    assert_problem(api.get("/v1/settings/modules", params={"property_id": P}), 403,
                   "policy_denied")
    assert_problem(api.request("PATCH", "/v1/settings/modules", params={"property_id": P},
                               json={"blocks": {}}), 403, "policy_denied")
    assert_problem(api.get("/v1/lov/room-types", params={"parent": P}), 403, "policy_denied")
    # naming no property: the deny could hold, so it does (fail closed)
    assert_problem(api.get("/v1/settings/modules"), 403, "policy_denied")


def test_the_org_wide_availability_leaves_a_denied_property_out(api, ctx):
    here, there = make_booking_hotel(ctx, rooms=1), make_booking_hotel(ctx, rooms=1)
    params = {"arrival_date": here.today.isoformat(),
              "departure_date": (here.today + timedelta(days=1)).isoformat()}

    def shown() -> set[str]:
        resp = api.get("/v1/availability", params=params)
        assert resp.status_code == 200, resp.text
        return {row["property_id"] for row in resp.json["data"]}

    assert shown() >= {str(here.id), str(there.id)}
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:inventory:read"],
                  "property_ids": [str(here.id)]})
    assert str(here.id) not in shown() and str(there.id) in shown()
    assert_problem(api.get("/v1/availability", params={**params, "property_id": str(here.id)}),
                   403, "policy_denied")


def test_a_kiosk_deny_stops_the_kiosk_walk_in_too(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    kiosk = _token(api, "hotel:pms:kiosk:write", "hotel:pms:kiosk:read", client_kind="kiosk",
                   sub="kiosk-1")
    url = f"/v1/properties/{hotel.id}/walk-in"
    body = {"guest": {"last_name": "Walker"}, "nights": 1, "payment_method_id": "pm_card_visa"}
    before = api.post(url, body, token=kiosk)
    assert before.status_code == 403 or before.json.get("code") != "policy_denied"
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:kiosk:*"],
                  "property_ids": [str(hotel.id)]})
    assert_problem(api.get(f"/v1/properties/{hotel.id}/kiosk-config", token=kiosk), 403,
                   "policy_denied")
    assert_problem(api.post(url, body, token=kiosk), 403, "policy_denied")


# -- admin lists do not widen scopes ------------------------------------------------------------

def test_the_front_desk_list_needs_the_reservations_read_scope_too(api, ctx):
    _two_hotels(api, ctx)
    desk = _token(api, "hotel:pms:frontdesk:read")
    assert_problem(api.get(f"{A}/frontdesk", token=desk), 403, "missing_scope")
    both = _token(api, "hotel:pms:frontdesk:read", RES_READ)
    assert api.get(f"{A}/frontdesk", token=both).status_code == 200


# -- configuration bundles: each section's domain scope and policy -------------------------------

def test_a_bundle_needs_each_sections_scope_and_policy(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/config-bundle"
    kiosk = {"enabled_modes": ["CHECK_IN"], "add_on_package_codes": [], "lockdown": False,
             "max_keys_per_stay": 10}
    bundle = {"bundle_version": 1, "kiosk_config": kiosk}
    admin_only = _token(api, "hotel:pms:admin")
    assert_problem(api.get(url, token=admin_only), 403, "missing_scope")
    assert_problem(api.post(url, bundle, token=admin_only), 403, "missing_scope")
    reads = ["hotel:pms:admin", "hotel:pms:properties:read", "hotel:pms:rates:read",
             "hotel:pms:kiosk:read", "hotel:pms:settings:read", "hotel:pms:lov:read"]
    reader = _token(api, *reads)
    assert api.get(url, token=reader).status_code == 200
    assert api.post(url, bundle, params={"dry_run": "true"}, token=reader).status_code == 200
    refused = assert_problem(api.post(url, bundle, token=reader), 403, "missing_scope")
    assert refused["section"] == "kiosk_config"
    writer = _token(api, *reads, "hotel:pms:kiosk:write")
    _policy(api, {"id": "kiosks-frozen", "effect": "deny", "scopes": ["hotel:pms:kiosk:write"],
                  "property_ids": [str(hotel.id)]})
    refused = assert_problem(api.post(url, bundle, token=writer), 403, "policy_denied")
    assert refused["rule_id"] == "kiosks-frozen"
    assert api.get(f"/v1/properties/{hotel.id}/kiosk-config").json["max_keys_per_stay"] != 10


def test_a_bundle_applies_with_its_sections_scopes(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/config-bundle"
    kiosk = {"enabled_modes": ["CHECK_IN"], "add_on_package_codes": [], "lockdown": False,
             "max_keys_per_stay": 3}
    resp = api.post(url, {"bundle_version": 1, "kiosk_config": kiosk})
    assert resp.status_code == 200, resp.text
    assert api.get(f"/v1/properties/{hotel.id}/kiosk-config").json["max_keys_per_stay"] == 3


# -- relations: company roles are company users --------------------------------------------------

def test_company_roles_through_relations_need_the_company_users_scopes(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    prop = str(hotel.id)
    company = api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]
    traveler = api.post(f"/v1/properties/{prop}/profiles", {
        "first_name": "Tia", "last_name": "Traveler",
        "email": f"{random_ref('t')}@example.com"}).json["id"]
    bound = api.post(f"/v1/properties/{prop}/companies/{company}/users",
                     {"traveler_profile_id": traveler, "role": "BOOKER"}).json
    policy_admin = _token(api, "hotel:pms:admin", "hotel:pms:policy:read",
                          "hotel:pms:policy:write")
    role = {"subject": f"profile:{traveler}", "relation": "ADMIN",
            "object": f"company:{company}", "property_id": prop}
    assert_problem(api.post(f"{A}/relations", role, token=policy_admin), 403, "missing_scope")
    listed = api.get(f"{A}/relations", token=policy_admin).json["data"]
    assert bound["id"] not in [r["id"] for r in listed]
    assert_problem(api.get(f"{A}/relations/{bound['id']}", token=policy_admin), 403,
                   "missing_scope")
    assert_problem(api.delete(f"{A}/relations/{bound['id']}", params={"property_id": prop},
                              token=policy_admin), 403, "missing_scope")
    # with the scopes, the decision point still governs them
    assert bound["id"] in [r["id"] for r in api.get(f"{A}/relations").json["data"]]
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:company_users:*"],
                  "property_ids": [prop]})
    assert_problem(api.post(f"{A}/relations", {**role, "subject": f"profile:{traveler}"}), 403,
                   "policy_denied")
    assert bound["id"] not in [r["id"] for r in api.get(f"{A}/relations").json["data"]]


# -- policy administration ----------------------------------------------------------------------

def _refused_field(api: Any, rule: dict[str, Any]) -> str:
    resp = api.post(f"{A}/policy-sets", {"name": random_ref("ps"), "rules": [rule]})
    return assert_problem(resp, 422, "policy_never_matches")["errors"][0]["field"]


def test_rules_that_can_never_match_are_refused_naming_the_field(api):
    deny = {"effect": "deny"}
    assert _refused_field(api, {**deny, "scopes": ["hotel:pms:reservation:write"]}) \
        == "rules[0].scopes[0]"
    assert _refused_field(api, {**deny, "scopes": ["hotel:pms:nothing:*"]}) == "rules[0].scopes[0]"
    assert _refused_field(api, {**deny, "scopes": ["*"], "subjects": ["dev-user"]}) \
        == "rules[0].subjects[0]"
    assert _refused_field(api, {**deny, "scopes": ["*"], "subjects": ["group:desk"]}) \
        == "rules[0].subjects[0]"
    assert _refused_field(api, {**deny, "scopes": ["*"],
                                "subjects": [f"profile:{str(uuid.uuid4()).upper()}"]}) \
        == "rules[0].subjects[0]"
    prop = str(uuid.uuid4())
    for spelled in (f"property:{prop}", prop.upper()):
        resp = api.post(f"{A}/attributes", {"target_kind": "property", "target_id": spelled,
                                            "name": "frozen", "value": "yes"})
        assert assert_problem(resp, 422, "policy_never_matches")["errors"][0]["field"] \
            == "target_id"
    resp = api.post(f"{A}/attributes", {"target_kind": "subject", "target_id": "ann",
                                        "name": "team", "value": "desk"})
    assert_problem(resp, 422, "policy_never_matches")
    resp = api.post(f"{A}/relations", {"subject": "group:desk", "relation": "staff",
                                       "object": f"property:{prop}"})
    assert assert_problem(resp, 422, "policy_never_matches")["errors"][0]["field"] == "subject"
    # well-spelled ones pass
    assert api.post(f"{A}/attributes", {"target_kind": "property", "target_id": prop,
                                        "name": "frozen", "value": "yes"}).status_code == 201
    _policy(api, {"effect": "deny", "scopes": ["hotel:pms:reservations:*"],
                  "subjects": ["user:ann"]})


def test_a_set_is_replaced_only_with_its_version(api):
    made = _policy(api, {"effect": "deny", "scopes": ["hotel:pms:rates:write"]})
    path = f"{A}/policy-sets/{made['id']}"
    read = api.get(path)
    assert read.headers["ETag"] == f'"{made["version"]}"'
    body = {"name": made["name"], "rules": []}
    assert_problem(api.put(path, body), 428, "precondition_required")
    changed = api.put(path, body, headers={"If-Match": read.headers["ETag"]})
    assert changed.status_code == 200, changed.text
    assert_problem(api.put(path, body, headers={"If-Match": read.headers["ETag"]}), 412,
                   "precondition_failed")
    assert api.put(path, body, headers={"If-Match": changed.headers["ETag"]}).status_code == 200


def test_would_this_be_allowed_answers_with_the_rule_that_decided(api):
    prop, other = str(uuid.uuid4()), str(uuid.uuid4())
    made = _policy(api, {"id": "no-rates-p", "effect": "deny",
                         "scopes": ["hotel:pms:rates:write"], "property_ids": [prop]})
    ask = {"sub": "ann", "scopes": ["hotel:pms:rates:write"], "property_id": prop}
    resp = api.post(f"{A}/policy-decisions", ask)
    assert resp.status_code == 200, resp.text
    assert (resp.json["decision"], resp.json["policy_set_id"], resp.json["rule_id"]) == (
        "deny", made["id"], "no-rates-p")
    assert api.post(f"{A}/policy-decisions", {**ask, "property_id": other}).json["decision"] \
        == "allow"
    assert api.post(f"{A}/policy-decisions", {**ask, "scopes": ["hotel:pms:rates:read"]}
                    ).json["decision"] == "allow"
    assert_problem(api.post(f"{A}/policy-decisions", {**ask, "scopes": ["hotel:pms:nope:x"]}),
                   422)
    no_policy_scope = _token(api, "hotel:pms:admin")
    assert_problem(api.post(f"{A}/policy-decisions", ask, token=no_policy_scope), 403,
                   "missing_scope")


def test_deny_overrides_and_one_allow_rule_locks_out_no_one_unless_its_set_says_so(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/rate-plans"
    machine = _token(api, "hotel:pms:rates:read", client_kind="machine")
    allow = _policy(api, {"id": "machines", "effect": "allow", "scopes": ["hotel:pms:rates:*"],
                          "client_kinds": ["machine"]})
    assert api.get(url).status_code == 200  # a user token: the allow does not narrow
    assert api.get(url, token=machine).status_code == 200
    path = f"{A}/policy-sets/{allow['id']}"
    api.put(path, {"name": allow["name"], "rules": allow["rules"], "default_effect": "deny"},
            headers={"If-Match": f'"{allow["version"]}"'})
    refused = assert_problem(api.get(url), 403, "policy_denied")
    assert refused["policy_set_id"] == allow["id"] and refused.get("rule_id") is None
    assert api.get(url, token=machine).status_code == 200
    deny = _policy(api, {"id": "no-machines", "effect": "deny",
                         "scopes": ["hotel:pms:rates:read"], "client_kinds": ["machine"]})
    refused = assert_problem(api.get(url, token=machine), 403, "policy_denied")
    assert (refused["policy_set_id"], refused["rule_id"]) == (deny["id"], "no-machines")


# -- bodies after the scope check ---------------------------------------------------------------

def test_a_caller_without_the_scope_gets_403_whatever_body_it_sends(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/reservations"
    reader = _token(api, RES_READ)
    json = {"Content-Type": "application/json"}
    bodies = ((b"{not json", 400, "malformed_json"),
              (b"[" * 40 + b"]" * 40, 400, "json_too_deep"),
              (b'{"notes": "a\\u0000b"}', 422, "validation_failed"),
              (b'{"notes": "4111 1111 1111 1111"}', 422, "card_data_refused"))
    for raw, status, code in bodies:
        assert_problem(api.request("POST", url, body=raw, token=reader, headers=json), 403,
                       "missing_scope")
        assert_problem(api.request("POST", url, body=raw, headers=json), status, code)
