"""Which level each company field lives at, through the HTTP API on SQLite and PostgreSQL: the
receivable (credit limit and currency) is env-level, under /v1/companies/{id}/receivable with its
own scope, so a revenue manager whose policies limit it to P1 changes it neither there nor from
P1's path; a negotiated rate's links are per property, so links edited under P1 never touch
P2's."""

from __future__ import annotations

from typing import Any

from pms.devkeys import all_scopes, mint_token
from tests.factories import make_booking_hotel, make_rate_plan
from tests.helpers import assert_problem, random_ref

A = "/v1/admin"


def _company(api: Any, prop: Any) -> str:
    resp = api.post(f"/v1/properties/{prop}/profiles", {"kind": "COMPANY",
                                                       "company_name": random_ref("Co")})
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def _limit_to(api: Any, sub: str, prop: Any) -> None:
    """A policy set under which `sub` acts on companies and their receivables at `prop` only;
    the test's own staff user (`dev-user`, the credit manager) everywhere."""
    scopes = ["hotel:pms:companies:*", "hotel:pms:company_receivables:*"]
    resp = api.post(f"{A}/policy-sets", {"name": random_ref("rm"), "default_effect": "deny",
                                         "rules": [
        {"id": "rm-p1", "effect": "allow", "subjects": [f"user:{sub}"], "scopes": scopes,
         "property_ids": [str(prop)]},
        {"id": "credit-manager", "effect": "allow", "subjects": ["user:dev-user"],
         "scopes": scopes}]})
    assert resp.status_code == 201, resp.text


def test_the_receivable_is_env_level_and_a_revenue_manager_of_one_property_cannot_change_it(
        api, ctx):
    p1, p2 = make_booking_hotel(ctx), make_booking_hotel(ctx)
    company = _company(api, p1.id)
    env_path = f"/v1/companies/{company}/receivable"
    p1_path = f"/v1/properties/{p1.id}/companies/{company}/receivable-account"
    body = {"credit_limit": "500.00", "currency": "EUR"}
    # the credit manager (no policy limits it) sets it at env level; the property path says
    # the same account
    assert api.put(env_path, body).status_code == 201
    assert api.get(p1_path).json["credit_limit"] == "500.00"
    assert api.get(env_path).json["credit_limit"] == "500.00"
    # a property in the query is refused: the env-level field is never decided for one
    assert_problem(api.put(env_path, body, params={"property_id": str(p1.id)}), 422)
    # the property path needs the env-level scope too
    without = mint_token(api.settings, env_id=api.env_id, sub="no-receivables", scopes=[
        s for s in all_scopes() if not s.startswith("hotel:pms:company_receivables:")])
    assert_problem(api.put(p1_path, {**body, "credit_limit": "900.00"}, token=without), 403,
                   "missing_scope")
    # a revenue manager limited to P1 by policy, with every scope in its token
    rm = "rev-manager"
    token = mint_token(api.settings, env_id=api.env_id, sub=rm, client_kind="user")
    routing = f"/v1/properties/{p1.id}/companies/{company}/routing-instructions"
    assert api.put(routing, {"categories": ["room"]}, token=token).status_code == 200  # control
    _limit_to(api, rm, p1.id)
    assert api.put(routing, {"categories": ["room", "tax"]}, token=token).status_code == 200
    assert_problem(api.put(routing.replace(str(p1.id), str(p2.id)), {"categories": ["room"]},
                           token=token), 403, "policy_denied")
    for path in (env_path, p1_path):
        refused = assert_problem(api.put(path, {**body, "credit_limit": "9000.00"},
                                         token=token), 403, "policy_denied")
        assert refused["policy_set_id"], refused
    assert api.get(env_path).json["credit_limit"] == "500.00"
    # the credit manager still can (the control: the policy governs the revenue manager only)
    assert api.put(p1_path, {**body, "credit_limit": "800.00"}).status_code == 200
    assert api.get(env_path).json["credit_limit"] == "800.00"


def test_rate_links_under_one_property_never_touch_anothers(api, ctx):
    p1, p2 = make_booking_hotel(ctx), make_booking_hotel(ctx)
    neg1 = make_rate_plan(ctx, p1.id, negotiated=True, code=random_ref("N1"))
    neg2 = make_rate_plan(ctx, p2.id, negotiated=True, code=random_ref("N2"))
    company = _company(api, p1.id)
    links1 = f"/v1/properties/{p1.id}/companies/{company}/rate-links"
    links2 = f"/v1/properties/{p2.id}/companies/{company}/rate-links"
    assert api.put(links1, {"rate_plan_ids": [str(neg1.id)]}).status_code == 200
    assert api.put(links2, {"rate_plan_ids": [str(neg2.id)]}).status_code == 200
    # each path shows its property's links; the profile keeps both (what the fence reads)
    assert api.get(links1).json["rate_plan_ids"] == [str(neg1.id)]
    assert api.get(links2).json["rate_plan_ids"] == [str(neg2.id)]
    prefs = api.get(f"/v1/properties/{p1.id}/profiles/{company}").json["preferences"]
    assert sorted(prefs["negotiated_rate_plan_ids"]) == sorted([str(neg1.id), str(neg2.id)])
    # unlinking under P1 leaves P2's link; P2's plan under P1's path is refused
    assert api.put(links1, {"rate_plan_ids": []}).json["rate_plan_ids"] == []
    assert api.get(links2).json["rate_plan_ids"] == [str(neg2.id)]
    refused = assert_problem(api.put(links1, {"rate_plan_ids": [str(neg2.id)]}), 422)
    assert [e["field"] for e in refused["errors"]] == ["rate_plan_ids"]
    prefs = api.get(f"/v1/properties/{p1.id}/profiles/{company}").json["preferences"]
    assert prefs["negotiated_rate_plan_ids"] == [str(neg2.id)]


def test_a_company_created_with_rate_links_needs_the_links_permission_at_each_plans_property(
        api, ctx):
    """SPEC's profile create takes preferences.negotiated_rate_plan_ids under one property's
    path; a plan is its own property's, so each link is decided there."""
    p1, p2 = make_booking_hotel(ctx), make_booking_hotel(ctx)
    neg1 = make_rate_plan(ctx, p1.id, negotiated=True, code=random_ref("N1"))
    neg2 = make_rate_plan(ctx, p2.id, negotiated=True, code=random_ref("N2"))
    path = f"/v1/properties/{p1.id}/profiles"

    def company(plan: Any, token: str | None = None) -> Any:
        return api.post(path, {"kind": "COMPANY", "company_name": random_ref("Co"),
                               "preferences": {"negotiated_rate_plan_ids": [str(plan.id)]}},
                        token=token)

    no_links = mint_token(api.settings, env_id=api.env_id, sub="no-links", scopes=[
        s for s in all_scopes() if s != "hotel:pms:rate_links:write"])
    assert_problem(company(neg1, no_links), 403, "missing_scope")
    assert api.post(path, {"kind": "COMPANY", "company_name": random_ref("Co")},
                    token=no_links).status_code == 201  # no links named: no links scope
    rm = "rev-manager"
    token = mint_token(api.settings, env_id=api.env_id, sub=rm, client_kind="user")
    resp = api.post(f"{A}/policy-sets", {"name": random_ref("rl"), "rules": [
        {"id": "rm-not-p2", "effect": "deny", "subjects": [f"user:{rm}"],
         "scopes": ["hotel:pms:rate_links:write"], "property_ids": [str(p2.id)]}]})
    assert resp.status_code == 201, resp.text
    assert_problem(company(neg2, token), 403, "policy_denied")
    assert company(neg1, token).status_code == 201  # the control: P1's plan from P1's path
    assert company(neg2).status_code == 201  # and P2's by a user the rule does not govern
