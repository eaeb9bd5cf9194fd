"""Stays billed to a company through the HTTP API, on SQLite and PostgreSQL: a
booking names one of the company's approved payment methods; a BILL_TO_COMPANY one is checked
against the credit limit (409 credit_limit_exceeded with limit, balance by part and needed)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from pms.devkeys import mint_token
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import assert_problem, counts, outbox_rows, owned_method, random_ref

# make_booking_hotel prices a night at 100.00: reservation_body's two nights are 200.00


@dataclass
class Billing:
    api: Any
    hotel: Any
    company: str
    base: str           # the company's routes
    bill: str           # a BILL_TO_COMPANY method
    postpay: str        # a POSTPAY method

    @property
    def url(self) -> str:
        return f"/v1/properties/{self.hotel.id}/reservations"

    def body(self, method: str | None = None, **over: Any) -> dict[str, Any]:
        return reservation_body(self.hotel, company_profile_id=self.company,
                                company_payment_method_id=method or self.bill, **over)

    def token(self, holder: str) -> str:
        return mint_token(self.api.settings, env_id=self.api.env_id, client_kind="user",
                          holder_id=holder)

    def method(self, *moves: tuple[str, dict | None]) -> str:
        pm = self.api.post(f"{self.base}/payment-methods", {
            "payment_method_id": owned_method(self.company)}).json["id"]
        for action, body in moves:
            assert self.api.post(f"{self.base}/payment-methods/{pm}/{action}",
                                 body).status_code == 200
        return pm


def _company(api: Any, hotel: Any) -> str:
    return api.post(f"/v1/properties/{hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]


@pytest.fixture
def billing(api, ctx) -> Billing:
    hotel = make_booking_hotel(ctx, rooms=6)
    company = _company(api, hotel)
    base = f"/v1/properties/{hotel.id}/companies/{company}"
    assert api.put(f"{base}/receivable-account", {"credit_limit": "500.00",
                                                  "currency": hotel.prop.currency_code}
                   ).status_code == 201
    b = Billing(api, hotel, company, base, "", "")
    b.bill = b.method(("approve", {"approval": "BILL_TO_COMPANY"}))
    b.postpay = b.method(("approve", {"approval": "POSTPAY"}))
    return b


def test_a_stay_billed_to_the_company_is_booked_while_under_its_credit_limit(billing, ctx):
    first = billing.api.post(billing.url, billing.body())
    assert first.status_code == 201, first.text
    assert first.json["total_amount"] == "200.00"
    event = outbox_rows(ctx)[-1]
    assert event.type == "hotel:pms:reservation:created"
    assert event.data["company_billing"] == {
        "company_profile_id": billing.company, "company_payment_method_id": billing.bill,
        "approval": "BILL_TO_COMPANY"}
    assert billing.api.post(billing.url, billing.body()).status_code == 201  # 400.00 of 500.00
    before = counts(ctx)
    over = billing.api.post(billing.url, billing.body())
    problem = assert_problem(over, 409, "credit_limit_exceeded")
    assert problem["credit_limit"] == "500.00" and problem["needed"] == "200.00"
    assert problem["exposure"] == {"total": "400.00", "future_stays": "400.00",
                                  "open_folios": "0.00", "receivable": "0.00"}
    assert counts(ctx) == before


def test_a_cancelled_stay_no_longer_counts_against_the_limit(billing):
    ids = [billing.api.post(billing.url, billing.body()).json["id"] for _ in range(2)]
    assert_problem(billing.api.post(billing.url, billing.body()), 409, "credit_limit_exceeded")
    assert billing.api.post(f"{billing.url}/{ids[0]}/cancel", {}).status_code == 200
    assert billing.api.post(billing.url, billing.body()).status_code == 201


def test_a_postpay_method_is_not_held_to_the_credit_limit(billing):
    for _ in range(4):  # 800.00 > 500.00
        resp = billing.api.post(billing.url, billing.body(billing.postpay))
        assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("case", ["pending", "rejected", "other_company", "unknown",
                                  "no_company"])
def test_only_an_approved_method_of_the_named_company_bills_it(billing, ctx, case):
    body = billing.body()
    if case == "pending":
        body["company_payment_method_id"] = billing.method()
    elif case == "rejected":
        body["company_payment_method_id"] = billing.method(("reject", {"reason": "no"}))
    elif case == "other_company":
        body["company_profile_id"] = _company(billing.api, billing.hotel)
    elif case == "unknown":
        body["company_payment_method_id"] = str(uuid.uuid4())
    else:
        del body["company_profile_id"]
    before = counts(ctx)
    resp = billing.api.post(billing.url, body)
    assert_problem(resp, 422)
    assert counts(ctx) == before


@pytest.mark.parametrize("role,allowed", [("ADMIN", True), ("BOOKER", True),
                                          ("TRAVELER", True), ("VIEWER", False)])
def test_a_traveler_bills_its_company_by_role(billing, role, allowed):
    traveler = billing.api.post(f"/v1/properties/{billing.hotel.id}/profiles", {
        "first_name": "T", "last_name": "R", "email": f"{random_ref('t')}@example.com"}).json["id"]
    billing.api.post(f"{billing.base}/users", {"traveler_profile_id": traveler, "role": role})
    resp = billing.api.post(billing.url, billing.body(guest_profile_id=traveler, guest=None),
                            token=billing.token(traveler))
    if allowed:
        assert resp.status_code == 201, resp.text
    else:
        assert_problem(resp, 422)
    # a traveler not bound to the company never bills it
    stranger = billing.api.post(f"/v1/properties/{billing.hotel.id}/profiles", {
        "first_name": "S", "last_name": "X", "email": f"{random_ref('s')}@example.com"}).json["id"]
    assert_problem(billing.api.post(billing.url, billing.body(guest_profile_id=stranger,
                                                              guest=None),
                                    token=billing.token(stranger)), 422)


# -- credit overrides ---------------------------------------------------------------------------

def _staff(api: Any, sub: str) -> str:
    return mint_token(api.settings, env_id=api.env_id, sub=sub)


def _request(billing: Billing, amount: str = "200.00", sub: str = "staff-a",
             expires: str = "2099-01-01T00:00:00Z") -> Any:
    return billing.api.post(f"{billing.base}/credit-overrides", {
        "amount": amount, "currency": billing.hotel.prop.currency_code,
        "reason": "trade fair week", "expires_at": expires}, token=_staff(billing.api, sub))


def test_an_override_needs_a_second_staff_user_and_then_raises_the_limit(billing, ctx):
    for _ in range(2):
        assert billing.api.post(billing.url, billing.body()).status_code == 201  # 400 of 500
    assert_problem(billing.api.post(billing.url, billing.body()), 409, "credit_limit_exceeded")
    requested = _request(billing)
    assert requested.status_code == 201, requested.text
    assert requested.json["status"] == "REQUESTED" and requested.json["requested_by"] == "staff-a"
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_credit_override:requested"
    oid = requested.json["id"]
    # a requested override does not count yet
    assert_problem(billing.api.post(billing.url, billing.body()), 409, "credit_limit_exceeded")
    url = f"{billing.base}/credit-overrides/{oid}/approve"
    before = counts(ctx)
    assert_problem(billing.api.post(url, None, token=_staff(billing.api, "staff-a")), 403,
                   "second_staff_required")
    assert counts(ctx) == before
    approved = billing.api.post(url, None, token=_staff(billing.api, "staff-b"))
    assert approved.status_code == 200 and approved.json["status"] == "ACTIVE"
    assert approved.json["decided_by"] == "staff-b"
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_credit_override:approved"
    assert billing.api.post(billing.url, billing.body()).status_code == 201  # 600 of 500 + 200
    problem = assert_problem(billing.api.post(billing.url, billing.body()), 409,
                             "credit_limit_exceeded")
    assert problem["overrides"] == "200.00" and problem["exposure"]["total"] == "600.00"
    # revoked: the limit is back to 500
    revoked = billing.api.post(f"{billing.base}/credit-overrides/{oid}/revoke", None)
    assert revoked.status_code == 200 and revoked.json["status"] == "REVOKED"
    assert_problem(billing.api.post(billing.url, billing.body()), 409, "credit_limit_exceeded")
    # moves outside the table
    assert_problem(billing.api.post(url, None, token=_staff(billing.api, "staff-b")), 409,
                   "invalid_transition")


def test_an_expired_override_no_longer_counts(billing, ctx):
    from datetime import timedelta

    from pms.db.uow import unit_of_work
    from pms.models import CompanyCreditOverride

    for _ in range(2):
        billing.api.post(billing.url, billing.body())
    oid = _request(billing).json["id"]
    billing.api.post(f"{billing.base}/credit-overrides/{oid}/approve", None,
                     token=_staff(billing.api, "staff-b"))
    with unit_of_work(ctx):
        CompanyCreditOverride.update(expires_at=ctx.now - timedelta(minutes=1)).where(
            CompanyCreditOverride.id == oid).execute()
    assert_problem(billing.api.post(billing.url, billing.body()), 409, "credit_limit_exceeded")


def test_an_override_needs_a_reason_an_amount_and_a_future_expiry(billing):
    assert_problem(_request(billing, expires="2001-01-01T00:00:00Z"), 422)
    assert_problem(_request(billing, amount="1.001"), 422)
    resp = billing.api.post(f"{billing.base}/credit-overrides", {
        "amount": "10.00", "currency": "EUR", "expires_at": "2099-01-01T00:00:00Z"})
    assert_problem(resp, 422)
    listed = billing.api.get(f"{billing.base}/credit-overrides").json["data"]
    assert listed == []


def test_credit_overrides_are_staff_only(billing):
    token = billing.token(billing.company)
    assert_problem(billing.api.get(f"{billing.base}/credit-overrides", token=token), 403,
                   "guest_not_allowed")
    assert_problem(billing.api.post(f"{billing.base}/credit-overrides", {
        "amount": "10.00", "currency": "EUR", "reason": "x",
        "expires_at": "2099-01-01T00:00:00Z"}, token=token), 403, "guest_not_allowed")


def test_an_edit_may_not_take_a_billed_stay_past_the_credit_limit(billing, ctx):
    from datetime import timedelta

    first = billing.api.post(billing.url, billing.body()).json  # 200.00
    second = billing.api.post(billing.url, billing.body()).json  # 400.00 of 500.00
    longer = (billing.hotel.today + timedelta(days=4)).isoformat()  # +200.00
    before = counts(ctx)
    problem = assert_problem(billing.api.put(f"{billing.url}/{second['id']}",
                                             {"departure_date": longer}),
                             409, "credit_limit_exceeded")
    assert problem["needed"] == "200.00" and problem["exposure"]["total"] == "400.00"
    assert counts(ctx) == before
    # one night more fits (500.00), a shorter stay always does
    one_more = (billing.hotel.today + timedelta(days=3)).isoformat()
    resp = billing.api.put(f"{billing.url}/{second['id']}", {"departure_date": one_more})
    assert resp.status_code == 200 and resp.json["total_amount"] == "300.00"
    shorter = (billing.hotel.today + timedelta(days=1)).isoformat()
    assert billing.api.put(f"{billing.url}/{first['id']}",
                           {"departure_date": shorter}).status_code == 200
    # a stay on a POSTPAY method is not held to the limit
    post = billing.api.post(billing.url, billing.body(billing.postpay)).json
    assert billing.api.put(f"{billing.url}/{post['id']}",
                           {"departure_date": longer}).status_code == 200
