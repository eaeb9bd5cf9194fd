"""Admin provisioning through the HTTP API, on SQLite and PostgreSQL: it calls the same use
cases as the rest of the API, in one unit of work: a new traveler is the profile service's
create (`hotel:pms:profile:created`), its binding is `add_user`'s (`company_user:added`), and a
traveler bound with another role is promoted with `company_user:role_changed` and a version bump
(so a consumer of `company_user:*` sees no gap)."""

from __future__ import annotations

from tests.api.test_companies import corp  # noqa: F401  (the fixture)
from tests.helpers import outbox_rows, random_ref


def _events(ctx, subject: str) -> list:
    return [e for e in outbox_rows(ctx) if e.subject == subject]


def test_a_new_admin_is_created_and_bound_through_their_use_cases(corp, ctx):  # noqa: F811
    email = f"{random_ref('adm')}@acme.example"
    resp = corp.api.put(f"{corp.base}/admin-provisioning",
                        {"email": email, "first_name": "Ann", "last_name": "Admin"})
    assert resp.status_code == 200, resp.text
    (admin,) = resp.json["admin_profile_ids"]
    [created] = _events(ctx, admin)
    assert created.type == "hotel:pms:profile:created" and created.data["email"] == email
    [binding] = corp.api.get(f"{corp.base}/users").json["data"]
    [added] = _events(ctx, binding["id"])
    assert added.type == "hotel:pms:company_user:added"
    assert (added.data["role"], added.data["traveler_profile_id"]) == ("ADMIN", admin)
    assert added.aggregate_version == 1


def test_a_promotion_is_a_role_change_with_a_version_bump(corp, ctx):  # noqa: F811
    email = f"{random_ref('pr')}@example.com"
    traveler = corp.traveler(email=email)
    binding = corp.bind(traveler, "VIEWER")
    resp = corp.api.put(f"{corp.base}/admin-provisioning",
                        {"email": email, "first_name": "P", "last_name": "Romoted"})
    assert resp.status_code == 200, resp.text
    added, changed = _events(ctx, binding)
    assert (added.type, added.aggregate_version) == ("hotel:pms:company_user:added", 1)
    assert (changed.type, changed.aggregate_version) == ("hotel:pms:company_user:role_changed", 2)
    assert changed.data["role"] == "ADMIN"
