"""A company user's role is changed in place (PATCH on the binding), through the HTTP API on
SQLite and PostgreSQL: audited, with `company_user:role_changed` and a version bump; the same
role again changes nothing; the last ADMIN of a company without an identity provider keeps the
role (409 last_company_admin); only the company's ADMIN or staff may change it."""

from __future__ import annotations

from tests.api.test_companies import _company, corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, counts, outbox_rows


def _patch(corp, binding: str, role: str, token: str | None = None):  # noqa: F811
    return corp.api.request("PATCH", f"{corp.base}/users/{binding}", json={"role": role},
                            **({"token": token} if token else {}))


def test_a_role_changes_in_place_with_its_event(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    binding = corp.bind(traveler, "VIEWER")
    resp = _patch(corp, binding, "BOOKER")
    assert resp.status_code == 200, resp.text
    assert (resp.json["id"], resp.json["role"]) == (binding, "BOOKER")
    event = outbox_rows(ctx)[-1]
    assert (event.type, event.subject, event.aggregate_version) == (
        "hotel:pms:company_user:role_changed", binding, 2)
    assert event.data["role"] == "BOOKER"
    before = counts(ctx)
    assert _patch(corp, binding, "BOOKER").status_code == 200  # the same role: nothing
    assert counts(ctx) == before
    [user] = corp.api.get(f"{corp.base}/users").json["data"]
    assert user["role"] == "BOOKER"
    assert_problem(_patch(corp, binding, "OWNER"), 422)


def test_the_last_admin_keeps_the_role_without_an_identity_provider(corp, ctx):  # noqa: F811
    first, second = corp.traveler(), corp.traveler()
    a = corp.bind(first, "ADMIN")
    before = counts(ctx)
    assert_problem(_patch(corp, a, "VIEWER"), 409, "last_company_admin")
    assert counts(ctx) == before
    b = corp.bind(second, "VIEWER")
    assert _patch(corp, b, "ADMIN", token=corp.token(first)).status_code == 200
    assert _patch(corp, a, "TRAVELER", token=corp.token(second)).status_code == 200
    # a company user below ADMIN may not change roles
    assert_problem(_patch(corp, b, "VIEWER", token=corp.token(first)), 403)


def test_with_an_identity_provider_the_last_admin_may_step_down(corp):  # noqa: F811
    company = _company(corp.api, corp.prop, sso_provider="okta")
    base = f"/v1/properties/{corp.prop}/companies/{company}"
    binding = corp.bind(corp.traveler(), "ADMIN", company=company)
    resp = corp.api.request("PATCH", f"{base}/users/{binding}", json={"role": "VIEWER"})
    assert resp.status_code == 200 and resp.json["role"] == "VIEWER"
