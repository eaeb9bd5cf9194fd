"""A company's identity provider (`preferences.sso_provider`) can be changed after creation, by
staff, through the HTTP API on SQLite and PostgreSQL: it decides `requires_provisioning` and
whether the last ADMIN may go; audited, with `hotel:pms:company:identity_provider_set`."""

from __future__ import annotations

from tests.api.test_companies import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, counts, outbox_rows


def test_the_identity_provider_is_set_and_cleared(corp, ctx):  # noqa: F811
    url = f"{corp.base}/identity-provider"
    assert corp.api.get(f"{corp.base}/admin-provisioning").json["requires_provisioning"] is True
    resp = corp.api.put(url, {"sso_provider": "azure-ad"})
    assert resp.status_code == 200, resp.text
    assert (resp.json["sso_provider"], resp.json["requires_provisioning"]) == ("azure-ad", False)
    event = outbox_rows(ctx)[-1]
    assert (event.type, event.data["sso_provider"]) == (
        "hotel:pms:company:identity_provider_set", "azure-ad")
    company = corp.api.get(f"/v1/properties/{corp.prop}/profiles/{corp.company}").json
    assert company["preferences"]["sso_provider"] == "azure-ad"
    before = counts(ctx)
    assert corp.api.put(url, {"sso_provider": "azure-ad"}).status_code == 200  # unchanged
    assert counts(ctx) == before
    # with a provider the last ADMIN may go; cleared, it stays
    admin = corp.bind(corp.traveler(), "ADMIN")
    assert corp.api.put(url, {"sso_provider": None}).json["requires_provisioning"] is False
    assert_problem(corp.api.delete(f"{corp.base}/users/{admin}"), 409, "last_company_admin")
    assert corp.api.put(url, {"sso_provider": "okta"}).status_code == 200
    assert corp.api.delete(f"{corp.base}/users/{admin}").status_code == 204
    assert_problem(corp.api.put(url, {"sso_provider": ""}), 422)


def test_only_staff_change_the_identity_provider(corp):  # noqa: F811
    assert corp.api.put(f"{corp.base}/identity-provider", {"sso_provider": "okta"},
                        token=corp.token(corp.company)).status_code == 403
