"""The four-eyes credit override's second approver, through the HTTP API on SQLite and
PostgreSQL: a user token (a person) other than the requester, holding its own scope
`hotel:pms:credit_overrides:approve` besides companies:write; a machine token or a user token
without the scope is refused and the override stays REQUESTED."""

from __future__ import annotations

from pms.devkeys import CREDIT_OVERRIDE_APPROVE, all_scopes, mint_token
from tests.api.test_company_direct_bill import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, counts


def _token(corp, sub: str, *, kind: str = "user", approve: bool = True) -> str:  # noqa: F811
    scopes = [s for s in all_scopes() if approve or s != CREDIT_OVERRIDE_APPROVE]
    return mint_token(corp.api.settings, env_id=corp.api.env_id, sub=sub, client_kind=kind,
                      scopes=scopes)


def test_the_second_approver_is_a_person_with_the_approval_scope(corp, ctx):  # noqa: F811
    url = f"{corp.base}/credit-overrides"
    ov = corp.api.post(url, {"amount": "100.00", "currency": corp.hotel.prop.currency_code,
                             "reason": "trade fair", "expires_at": "2099-01-01T00:00:00Z"},
                       token=_token(corp, "staff-a"))
    assert ov.status_code == 201, ov.text
    approve = f"{url}/{ov.json['id']}/approve"
    before = counts(ctx)
    assert_problem(corp.api.post(approve, None, token=_token(corp, "staff-b", approve=False)),
                   403, "missing_scope")
    assert_problem(corp.api.post(approve, None, token=_token(corp, "night-job", kind="machine")),
                   403, "second_staff_required")
    assert counts(ctx) == before
    [listed] = corp.api.get(url).json["data"]
    assert listed["status"] == "REQUESTED"
    resp = corp.api.post(approve, None, token=_token(corp, "staff-b"))
    assert resp.status_code == 200, resp.text
    assert (resp.json["status"], resp.json["decided_by"]) == ("ACTIVE", "staff-b")
