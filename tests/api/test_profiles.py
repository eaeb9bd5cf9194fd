"""Guest and company profiles: create-or-ensure, read, loyalty number, holder scoping."""

from __future__ import annotations

import uuid

import pytest

from pms.devkeys import mint_token
from tests.helpers import assert_problem, counts


@pytest.fixture
def prop(api):
    return api.post("/v1/properties", {"propertyCode": "PRO1", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json["id"]


def test_create_then_ensure_by_email_returns_the_existing_profile_with_200(api, prop, ctx):
    body = {"first_name": "Ada", "last_name": "Lovelace", "email": "Ada@Example.com"}
    first = api.post(f"/v1/properties/{prop}/profiles", body)
    assert first.status_code == 201
    assert first.json["profile_id"] == first.json["id"]
    before = counts(ctx)
    again = api.post(f"/v1/properties/{prop}/profiles", {**body, "email": "ada@example.COM"})
    assert again.status_code == 200
    assert again.json["id"] == first.json["id"]
    assert counts(ctx) == before  # ensure writes nothing


def test_ensure_by_external_reference(api, prop):
    body = {"last_name": "Hopper", "external_ref": "CRM-42"}
    first = api.post(f"/v1/properties/{prop}/profiles", body)
    again = api.post(f"/v1/properties/{prop}/profiles", {"last_name": "Other", "external_ref": "CRM-42"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json["id"] == first.json["id"]


def test_ensure_on_an_unknown_property_is_404_and_writes_nothing(api, prop, ctx):
    before = counts(ctx)
    for body in ({"last_name": "Nobody", "email": "nobody@example.com"},
                 {"last_name": "Nobody", "external_ref": "CRM-404"}):
        assert_problem(api.post(f"/v1/properties/{uuid.uuid4()}/profiles", body), 404)
    assert counts(ctx) == before
    # the same bodies on the real property are new profiles (nothing was left behind)
    for body in ({"last_name": "Nobody", "email": "nobody@example.com"},
                 {"last_name": "Nobody", "external_ref": "CRM-404"}):
        assert api.post(f"/v1/properties/{prop}/profiles", body).status_code == 201


def test_ensure_prefers_the_email_then_the_external_reference_and_writes_nothing(api, prop, ctx):
    by_email = api.post(f"/v1/properties/{prop}/profiles",
                        {"last_name": "Email", "email": "first@example.com"}).json["id"]
    by_ref = api.post(f"/v1/properties/{prop}/profiles",
                      {"last_name": "Ref", "external_ref": "CRM-7"}).json["id"]
    before = counts(ctx)
    both = api.post(f"/v1/properties/{prop}/profiles",
                    {"last_name": "X", "email": "FIRST@example.com", "external_ref": "CRM-7"})
    assert (both.status_code, both.json["id"]) == (200, by_email)
    new_email = api.post(f"/v1/properties/{prop}/profiles",
                         {"last_name": "Y", "email": "new@example.com", "external_ref": "CRM-7"})
    assert (new_email.status_code, new_email.json["id"]) == (200, by_ref)
    assert counts(ctx) == before


def test_profiles_are_per_env(api, prop):
    body = {"last_name": "Lamarr", "email": "hedy@example.com"}
    api.post(f"/v1/properties/{prop}/profiles", body)
    other = api.for_env(uuid.uuid4())
    other_prop = other.post("/v1/properties", {"propertyCode": "PRO1", "timezone": "UTC",
                                               "currencyCode": "EUR"}).json["id"]
    assert other.post(f"/v1/properties/{other_prop}/profiles", body).status_code == 201


def test_company_profile_with_negotiated_plans(api, prop):
    plan = api.post(f"/v1/properties/{prop}/rate-plans", {"code": "NEG", "name": "Corp",
                                                          "negotiated": True}).json
    company = api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": "ACME", "email": "travel@acme.example",
        "preferences": {"sso_provider": None, "negotiated_rate_plan_ids": [plan["id"]]}})
    assert company.status_code == 201, company.text
    prefs = company.json["preferences"]
    assert prefs["negotiated_rate_plan_ids"] == [plan["id"]]
    assert prefs["provisioned_admin_at"] is None
    assert_problem(api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": "X",
        "preferences": {"negotiated_rate_plan_ids": [str(uuid.uuid4())]}}), 422)


def test_profile_needs_a_name(api, prop):
    assert_problem(api.post(f"/v1/properties/{prop}/profiles", {"email": "x@example.com"}), 422)
    assert_problem(api.post(f"/v1/properties/{prop}/profiles", {"kind": "COMPANY"}), 422)


def test_provisioned_admin_at_is_server_owned(api, prop):
    assert_problem(api.post(f"/v1/properties/{prop}/profiles", {
        "last_name": "X", "preferences": {"provisioned_admin_at": "2026-01-01T00:00:00Z"}}), 422)


def test_loyalty_number_is_set_by_put(api, prop, ctx):
    pid = api.post(f"/v1/properties/{prop}/profiles", {"last_name": "Curie"}).json["id"]
    resp = api.put(f"/v1/properties/{prop}/profiles/{pid}/loyalty-number", {"loyalty_number": "GOLD-1"})
    assert resp.status_code == 200 and resp.json["loyalty_number"] == "GOLD-1"
    assert api.get(f"/v1/properties/{prop}/profiles/{pid}").json["loyalty_number"] == "GOLD-1"
    assert_problem(api.put(f"/v1/properties/{prop}/profiles/{uuid.uuid4()}/loyalty-number",
                           {"loyalty_number": "X"}), 404)
    assert_problem(api.put(f"/v1/properties/{prop}/profiles/{pid}/loyalty-number",
                           {"loyalty_number": ""}), 422)


def test_guest_sessions_see_only_their_own_profile(api, prop, settings):
    mine = api.post(f"/v1/properties/{prop}/profiles", {"last_name": "Me"}).json["id"]
    theirs = api.post(f"/v1/properties/{prop}/profiles", {"last_name": "Them"}).json["id"]
    guest = mint_token(settings, env_id=api.env_id, client_kind="guest", holder_id=mine,
                       scopes=["hotel:pms:profiles:read", "hotel:pms:profiles:write"])
    assert api.get(f"/v1/properties/{prop}/profiles/{mine}", token=guest).status_code == 200
    assert_problem(api.get(f"/v1/properties/{prop}/profiles/{theirs}", token=guest), 404)


def test_a_guest_sets_no_loyalty_number_not_even_its_own_while_staff_do(api, prop, settings):
    mine = api.post(f"/v1/properties/{prop}/profiles", {"last_name": "Me"}).json["id"]
    theirs = api.post(f"/v1/properties/{prop}/profiles", {"last_name": "Them"}).json["id"]
    guest = mint_token(settings, env_id=api.env_id, client_kind="guest", holder_id=mine,
                       scopes=["hotel:pms:profiles:read", "hotel:pms:profiles:write"])
    for pid in (mine, theirs):
        assert_problem(api.put(f"/v1/properties/{prop}/profiles/{pid}/loyalty-number",
                               {"loyalty_number": "GOLD-99"}, token=guest),
                       403, "guest_not_allowed")
    assert api.get(f"/v1/properties/{prop}/profiles/{mine}",
                   token=guest).json["loyalty_number"] is None
    staff = api.put(f"/v1/properties/{prop}/profiles/{mine}/loyalty-number",
                    {"loyalty_number": "GOLD-99"})
    assert staff.status_code == 200 and staff.json["loyalty_number"] == "GOLD-99"
    assert api.get(f"/v1/properties/{prop}/profiles/{mine}",
                   token=guest).json["loyalty_number"] == "GOLD-99"


@pytest.mark.postgres
def test_concurrent_ensures_make_one_profile(pg_db, ctx):
    import threading

    import msgspec

    from pms.schemas.profiles import ProfileIn
    from pms.services.profiles import profiles
    from tests.factories import make_property

    prop = make_property(ctx)
    body = msgspec.convert({"last_name": "Race", "email": "race@example.com"}, ProfileIn)
    results, barrier = [], threading.Barrier(8, timeout=120)

    def ensure() -> None:
        from pms.db.database import db

        barrier.wait()
        try:
            results.append(profiles.ensure_profile(ctx, prop.id, body))
        finally:
            db.close()

    threads = [threading.Thread(target=ensure) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({row.id for row, _ in results}) == 1
    assert sum(created for _, created in results) == 1


def test_the_profile_refs_function_matches_the_model(api, ctx):
    """pms_profile_refs (migrations 014, 020, 030) returns property_found, then the profile
    whole (the table's row type): the caller names the columns as the model lists them, so a
    column added to `profile` needs no change to the function."""
    from pms.db.database import db, is_postgres
    from pms.db.uow import read_scope

    if not is_postgres():
        pytest.skip("the function is PostgreSQL's")
    with read_scope(ctx):
        cursor = db.execute_sql("SELECT * FROM pms_profile_refs(%s, %s, %s, %s)",
                                (ctx.env_id.hex, uuid.uuid4().hex, "nobody@example.com", None))
        described = [(c.name, c.type_code) for c in cursor.description]
        row = cursor.fetchone()
        row_type = db.execute_sql("SELECT reltype FROM pg_class"
                                  " WHERE oid = 'profile'::regclass").fetchone()[0]
    assert described[0][0] == "property_found" and described[1] == ("pr_row", row_type)
    assert len(described) == 2
    # no profile: a row of NULLs (psycopg2 shows a row type as its text, "(,,...)")
    assert row[0] is False and (row[1] is None or set(row[1]) <= set("(),"))
