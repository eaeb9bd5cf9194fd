"""Corporate accounts through the HTTP API, on SQLite and PostgreSQL: company users
and their roles, holder guards, admin provisioning. Payment methods: test_company_payment_methods.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from pms.devkeys import mint_token
from pms.domain.companies import ROLE_ACTIONS, CompanyAction, CompanyRole
from tests.helpers import assert_problem, audit_actions, counts, outbox_rows, random_ref


@dataclass
class Corp:
    api: Any
    prop: str
    company: str
    other_company: str

    @property
    def base(self) -> str:
        return f"/v1/properties/{self.prop}/companies/{self.company}"

    def traveler(self, **over: Any) -> str:
        body = {"first_name": "Tom", "last_name": "Traveler",
                "email": f"{random_ref('t')}@example.com", **over}
        resp = self.api.post(f"/v1/properties/{self.prop}/profiles", body)
        assert resp.status_code == 201, resp.text
        return resp.json["id"]

    def token(self, holder: str, kind: str = "user") -> str:
        return mint_token(self.api.settings, env_id=self.api.env_id, client_kind=kind,
                          holder_id=holder)

    def bind(self, traveler: str, role: str, company: str | None = None) -> str:
        base = self.base if company is None else self.base.replace(self.company, company)
        resp = self.api.post(f"{base}/users", {"traveler_profile_id": traveler, "role": role})
        assert resp.status_code == 201, resp.text
        return resp.json["id"]


def _company(api: Any, prop: str, **prefs: Any) -> str:
    resp = api.post(f"/v1/properties/{prop}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co"), "preferences": prefs})
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def make_corp(api: Any) -> Corp:
    prop = api.post("/v1/properties", {"propertyCode": random_ref("C").upper(),
                                       "timezone": "UTC", "currencyCode": "EUR"}).json["id"]
    return Corp(api, prop, _company(api, prop), _company(api, prop))


@pytest.fixture
def corp(api) -> Corp:
    return make_corp(api)


# -- company users ----------------------------------------------------------------------------

def test_staff_bind_a_traveler_with_a_role_and_it_is_audited_with_an_event(corp, ctx):
    traveler = corp.traveler()
    resp = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": traveler,
                                                "role": "BOOKER"})
    assert resp.status_code == 201, resp.text
    assert resp.json["role"] == "BOOKER" and resp.json["traveler_profile_id"] == traveler
    listed = corp.api.get(f"{corp.base}/users").json["data"]
    assert [(u["traveler_profile_id"], u["role"]) for u in listed] == [(traveler, "BOOKER")]
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_user:added"
    assert audit_actions(ctx)[-1] == "company_user.added"


def test_a_traveler_is_bound_once_per_company_but_may_belong_to_many(corp, ctx):
    traveler = corp.traveler()
    corp.bind(traveler, "TRAVELER")
    before = counts(ctx)
    again = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": traveler,
                                                 "role": "ADMIN"})
    assert_problem(again, 409, "already_exists")
    assert counts(ctx) == before
    corp.bind(traveler, "VIEWER", company=corp.other_company)


def test_the_binding_is_unique_in_the_database(corp, ctx):
    from pms.db.uow import unit_of_work
    from pms.models import CompanyUser

    traveler = uuid.UUID(corp.traveler())
    corp.bind(str(traveler), "TRAVELER")
    with pytest.raises(Exception) as err:  # noqa: PT011 - the driver's IntegrityError
        with unit_of_work(ctx):
            CompanyUser.build(company_profile_id=uuid.UUID(corp.company),
                              traveler_profile_id=traveler, role="ADMIN",
                              version=1).save(force_insert=True)
    assert "unique" in str(err.value).lower() or "duplicate" in str(err.value).lower()


def test_binding_an_unknown_or_company_profile_is_422(corp):
    for who in (str(uuid.uuid4()), corp.other_company, corp.company):
        assert_problem(corp.api.post(f"{corp.base}/users", {"traveler_profile_id": who,
                                                            "role": "VIEWER"}), 422)
    assert_problem(corp.api.post(f"{corp.base}/users", {"traveler_profile_id": corp.traveler(),
                                                        "role": "OWNER"}), 422)


def test_company_routes_answer_404_for_a_guest_profile_or_unknown_company(corp):
    traveler = corp.traveler()
    for company in (traveler, str(uuid.uuid4())):
        url = f"/v1/properties/{corp.prop}/companies/{company}/users"
        assert_problem(corp.api.get(url), 404)


def test_the_last_admin_cannot_be_removed_without_an_identity_provider(corp, ctx):
    first, second = corp.traveler(), corp.traveler()
    a = corp.bind(first, "ADMIN")
    b = corp.bind(second, "ADMIN")
    assert corp.api.delete(f"{corp.base}/users/{a}").status_code == 204
    before = counts(ctx)
    assert_problem(corp.api.delete(f"{corp.base}/users/{b}"), 409, "last_company_admin")
    assert counts(ctx) == before
    # the admin themselves cannot either
    assert_problem(corp.api.delete(f"{corp.base}/users/{b}", token=corp.token(second)), 409,
                   "last_company_admin")
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_user:removed"
    assert audit_actions(ctx)[-1] == "company_user.removed"


def test_the_last_admin_may_go_when_the_company_has_an_identity_provider(corp):
    company = _company(corp.api, corp.prop, sso_provider="okta")
    base = corp.base.replace(corp.company, company)
    only = corp.bind(corp.traveler(), "ADMIN", company=company)
    assert corp.api.delete(f"{base}/users/{only}").status_code == 204


def test_removing_another_companys_binding_through_this_company_is_404(corp):
    theirs = corp.bind(corp.traveler(), "VIEWER", company=corp.other_company)
    assert_problem(corp.api.delete(f"{corp.base}/users/{theirs}"), 404)


# -- the role table, cell by cell (README "Corporate accounts") --------------------------------

def _users_cells(corp: Corp, role: str) -> dict[CompanyAction, bool]:
    """What the API lets a traveler of `role` do with company users; True = served."""
    me = corp.traveler()
    mine = corp.bind(me, role)
    other = corp.traveler()
    theirs = corp.bind(other, "VIEWER")
    corp.bind(corp.traveler(), "ADMIN")  # so removing an ADMIN is never the last one
    token = corp.token(me)
    cells = {}
    listed = corp.api.get(f"{corp.base}/users", token=token)
    assert listed.status_code == 200, listed.text
    seen = {u["id"] for u in listed.json["data"]}
    cells[CompanyAction.LIST_USERS] = theirs in seen
    cells[CompanyAction.LIST_OWN_USER] = mine in seen
    added = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": corp.traveler(),
                                                 "role": "VIEWER"}, token=token)
    # a company ADMIN's add is an invitation the traveler accepts (test_corporate_invitations)
    assert added.status_code in (202, 403), added.text
    if added.status_code == 403:
        assert_problem(added, 403, "company_role_forbidden")
    cells[CompanyAction.ADD_USER] = added.status_code == 202
    removed = corp.api.delete(f"{corp.base}/users/{theirs}", token=token)
    assert removed.status_code in (204, 403), removed.text
    cells[CompanyAction.REMOVE_USER] = removed.status_code == 204
    return cells


@pytest.mark.parametrize("role", [r.value for r in CompanyRole])
def test_company_user_routes_follow_the_role_table(corp, role):
    cells = _users_cells(corp, role)
    expected = {action: action in ROLE_ACTIONS[CompanyRole(role)] for action in cells}
    assert cells == expected


def test_the_role_table_is_the_documented_one():
    # README "Corporate accounts": this literal is the table there; change both together
    a = CompanyAction
    documented = {
        "ADMIN": set(a),
        "BOOKER": {a.LIST_USERS, a.LIST_OWN_USER, a.LIST_PAYMENT_METHODS,
                   a.LIST_USABLE_PAYMENT_METHODS, a.SEARCH_CORPORATE, a.BOOK_OWN,
                   a.BOOK_FOR_TRAVELER},
        "VIEWER": {a.LIST_USERS, a.LIST_OWN_USER, a.LIST_PAYMENT_METHODS,
                   a.LIST_USABLE_PAYMENT_METHODS, a.SEARCH_CORPORATE},
        "TRAVELER": {a.LIST_OWN_USER, a.LIST_USABLE_PAYMENT_METHODS, a.SEARCH_CORPORATE,
                     a.BOOK_OWN},
    }
    assert {r.value: set(acts) for r, acts in ROLE_ACTIONS.items()} == documented


def test_the_companys_own_profile_token_acts_as_its_admin(corp):
    token = corp.token(corp.company)
    traveler = corp.traveler()
    resp = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": traveler,
                                                "role": "BOOKER"}, token=token)
    assert resp.status_code == 202 and resp.json["status"] == "PENDING", resp.text
    accepted = corp.api.post(f"/v1/properties/{corp.prop}/profiles/{traveler}/"
                             f"company-invitations/{resp.json['id']}/accept", None,
                             token=corp.token(traveler, "guest"))
    assert accepted.status_code == 200, accepted.text
    assert len(corp.api.get(f"{corp.base}/users", token=token).json["data"]) == 1
    # ... of its own company only
    other = corp.base.replace(corp.company, corp.other_company)
    assert_problem(corp.api.get(f"{other}/users", token=token), 404)


# -- holder guards ----------------------------------------------------------------------------

def test_a_traveler_of_company_a_gets_404_for_company_b(corp):
    me = corp.traveler()
    corp.bind(me, "ADMIN")
    theirs = corp.bind(corp.traveler(), "ADMIN", company=corp.other_company)
    other = corp.base.replace(corp.company, corp.other_company)
    token = corp.token(me)
    assert_problem(corp.api.get(f"{other}/users", token=token), 404)
    assert_problem(corp.api.delete(f"{other}/users/{theirs}", token=token), 404)
    assert_problem(corp.api.post(f"{other}/users", {"traveler_profile_id": me,
                                                    "role": "ADMIN"}, token=token), 404)
    # and A's row addressed through A's path but with B's binding id: 404 too
    assert_problem(corp.api.delete(f"{corp.base}/users/{theirs}", token=token), 404)
    assert corp.api.get(f"{corp.base}/users", token=token).status_code == 200


@pytest.mark.parametrize("kind", ["guest", "kiosk", "anonymous"])
def test_a_non_traveler_session_gets_nothing_even_when_its_holder_is_bound(corp, kind):
    me = corp.traveler()
    corp.bind(me, "ADMIN")
    # a guest session finds nothing (404); kiosk and anonymous tokens are refused by the route
    # gate before anything is looked up (403 kiosk_/anonymous_not_allowed)
    status, code = (404, None) if kind == "guest" else (403, f"{kind}_not_allowed")
    assert_problem(corp.api.get(f"{corp.base}/users", token=corp.token(me, kind)), status, code)
    assert_problem(corp.api.get(f"{corp.base}/users", token=corp.token(corp.company, kind)),
                   status, code)


# -- admin provisioning -------------------------------------------------------------------------

def test_provisioning_creates_the_traveler_binds_it_as_admin_stamps_and_emits_once(corp, ctx):
    url = f"{corp.base}/admin-provisioning"
    assert corp.api.get(url).json["requires_provisioning"] is True
    email = f"{random_ref('adm')}@Acme.example"
    body = {"email": email, "first_name": "Ann", "last_name": "Admin"}
    before = counts(ctx)
    resp = corp.api.put(url, body)
    assert resp.status_code == 200, resp.text
    assert resp.json["requires_provisioning"] is False and resp.json["provisioned_admin_at"]
    (admin,) = resp.json["admin_profile_ids"]
    # the profile's create and the binding are their own use cases' changes, with their events
    assert counts(ctx) == (before[0] + 3, before[1] + 3)
    assert [e.type for e in outbox_rows(ctx)[-3:]] == [
        "hotel:pms:profile:created", "hotel:pms:company_user:added",
        "hotel:pms:company:admin_provisioned"]
    event = outbox_rows(ctx)[-1]
    assert event.type == "hotel:pms:company:admin_provisioned"
    assert event.subject == corp.company and event.data["traveler_profile_id"] == admin
    assert event.data["traveler_created"] is True
    users = corp.api.get(f"{corp.base}/users").json["data"]
    assert [(u["traveler_profile_id"], u["role"]) for u in users] == [(admin, "ADMIN")]
    profile = corp.api.get(f"/v1/properties/{corp.prop}/profiles/{admin}").json
    assert profile["email"] == email and profile["last_name"] == "Admin"
    company = corp.api.get(f"/v1/properties/{corp.prop}/profiles/{corp.company}").json
    assert company["preferences"]["provisioned_admin_at"] == resp.json["provisioned_admin_at"]
    # repeating it (any case of the email) changes nothing and emits nothing
    snapshot = counts(ctx)
    again = corp.api.put(url, {**body, "email": email.upper()})
    assert again.status_code == 200 and again.json == resp.json
    assert counts(ctx) == snapshot
    # another admin while one is bound: refused, nothing written
    other = corp.api.put(url, {**body, "email": f"{random_ref('x')}@acme.example"})
    assert_problem(other, 409, "company_admin_exists")
    assert counts(ctx) == snapshot


def test_provisioning_resolves_an_existing_traveler_by_email(corp, ctx):
    email = f"{random_ref('ex')}@example.com"
    existing = corp.traveler(email=email)
    resp = corp.api.put(f"{corp.base}/admin-provisioning",
                        {"email": email, "first_name": "Other", "last_name": "Name"})
    assert resp.status_code == 200 and resp.json["admin_profile_ids"] == [existing]
    assert outbox_rows(ctx)[-1].data["traveler_created"] is False


def test_requires_provisioning_is_false_with_an_identity_provider_or_a_bound_admin(corp):
    sso = _company(corp.api, corp.prop, sso_provider="azure-ad")
    url = f"/v1/properties/{corp.prop}/companies/{sso}/admin-provisioning"
    assert corp.api.get(url).json["requires_provisioning"] is False
    assert corp.api.get(f"{corp.base}/admin-provisioning").json["requires_provisioning"] is True
    corp.bind(corp.traveler(), "VIEWER")
    assert corp.api.get(f"{corp.base}/admin-provisioning").json["requires_provisioning"] is True
    corp.bind(corp.traveler(), "ADMIN")
    assert corp.api.get(f"{corp.base}/admin-provisioning").json["requires_provisioning"] is False


def test_provisioning_is_staff_only(corp):
    token = corp.token(corp.company)
    assert_problem(corp.api.get(f"{corp.base}/admin-provisioning", token=token), 403,
                   "guest_not_allowed")
    assert_problem(corp.api.put(f"{corp.base}/admin-provisioning", {
        "email": "a@b.example", "first_name": "A", "last_name": "B"}, token=token), 403,
        "guest_not_allowed")


def test_provisioning_refuses_an_email_of_a_company_profile(corp):
    email = f"{random_ref('c')}@corp.example"
    corp.api.post(f"/v1/properties/{corp.prop}/profiles", {
        "kind": "COMPANY", "company_name": "Z", "email": email})
    assert_problem(corp.api.put(f"{corp.base}/admin-provisioning", {
        "email": email, "first_name": "A", "last_name": "B"}), 422)


def test_provisioning_promotes_a_traveler_already_bound_with_another_role(corp, ctx):
    email = f"{random_ref('pr')}@example.com"
    traveler = corp.traveler(email=email)
    binding = corp.bind(traveler, "VIEWER")
    resp = corp.api.put(f"{corp.base}/admin-provisioning",
                        {"email": email, "first_name": "P", "last_name": "Romoted"})
    assert resp.status_code == 200 and resp.json["admin_profile_ids"] == [traveler]
    users = corp.api.get(f"{corp.base}/users").json["data"]
    assert [(u["id"], u["role"]) for u in users] == [(binding, "ADMIN")]
    event = outbox_rows(ctx)[-1]
    assert event.data["previous_binding"]["role"] == "VIEWER"
    assert event.data["company_user_id"] == binding
