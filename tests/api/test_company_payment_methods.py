"""Company payment methods through the HTTP API, on SQLite and PostgreSQL: the
approval machine (every move of its table, the refused ones), who may submit, approve and
resubmit, the corporate checkout's usable list, events and audit rows, holder guards."""

from __future__ import annotations

import pytest

from pms.db.uow import unit_of_work
from pms.domain.companies import ROLE_ACTIONS, CompanyAction, CompanyRole
from pms.domain.states import COMPANY_PAYMENT_METHOD_MACHINE, CompanyPaymentMethodStatus
from pms.models import CompanyPaymentMethod
from pms.platform.payments import EmbeddedPayments
from tests.api.test_companies import Corp, make_corp
from tests.helpers import assert_problem, audit_actions, counts, outbox_rows, owned_method

S = CompanyPaymentMethodStatus


@pytest.fixture
def corp(api) -> Corp:
    corp = make_corp(api)
    resp = api.put(f"{corp.base}/receivable-account", {"credit_limit": "5000.00",
                                                       "currency": "EUR"})
    assert resp.status_code == 201, resp.text
    return corp


def _submit(corp: Corp, token: str | None = None) -> dict:
    resp = corp.api.post(f"{corp.base}/payment-methods", {"payment_method_id": owned_method(
                                                              corp.company),
                                                          "label": "Amex"}, token=token)
    assert resp.status_code == 201, resp.text
    return resp.json


def _do(corp: Corp, pm: str, action: str, body: dict | None = None, token: str | None = None):
    return corp.api.post(f"{corp.base}/payment-methods/{pm}/{action}", body, token=token)


# the API call of each trigger of the machine
TRIGGERS = {
    "approve_postpay": ("approve", {"approval": "POSTPAY"}),
    "approve_bill_to_company": ("approve", {"approval": "BILL_TO_COMPANY"}),
    "reject": ("reject", {"reason": "no contract"}),
    "suspend": ("suspend", {"reason": "credit limit"}),
    "resubmit": ("resubmit", None),
}
# a path from PENDING to each state
TO = {S.PENDING: [], S.POSTPAY: ["approve_postpay"], S.BILL_TO_COMPANY:
      ["approve_bill_to_company"], S.REJECTED: ["reject"]}
EVENT = {"approve_postpay": "approved", "approve_bill_to_company": "approved",
         "reject": "rejected", "suspend": "suspended", "resubmit": "resubmitted"}


def _at(corp: Corp, state: S) -> str:
    pm = _submit(corp)["id"]
    for trigger in TO[state]:
        action, body = TRIGGERS[trigger]
        assert _do(corp, pm, action, body).status_code == 200
    return pm


def test_a_submitted_method_is_pending_and_announced(corp, ctx):
    out = _submit(corp)
    assert out["approval"] == "PENDING" and out["reason"] is None
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_payment_method:submitted"
    assert audit_actions(ctx)[-1] == "company_payment_method.submitted"
    again = corp.api.post(f"{corp.base}/payment-methods",
                          {"payment_method_id": out["payment_method_id"]})
    assert_problem(again, 409, "already_exists")


def test_a_token_the_payments_service_does_not_report_as_the_companys_is_refused(corp, ctx):
    """Nobody's (a well-known test card), the other company's, a traveler's own card: 422
    naming payment_method_id, nothing stored, no event; staff and the company's ADMIN alike."""
    traveler = corp.traveler()
    admin = corp.token(corp.company)  # the company's own session (its ADMIN)
    before = counts(ctx)
    for token in (None, admin):
        for method in ("pm_card_visa", owned_method(corp.other_company),
                       owned_method(traveler), "pm_holder_nothex"):
            resp = corp.api.post(f"{corp.base}/payment-methods",
                                 {"payment_method_id": method}, token=token)
            problem = assert_problem(resp, 422, "payment_method_not_allowed")
            assert [e["field"] for e in problem["errors"]] == ["payment_method_id"], method
    assert counts(ctx) == before
    assert corp.api.get(f"{corp.base}/payment-methods").json["data"] == []


def test_the_approver_sees_the_card_the_payments_service_reports(corp):
    """The summary (brand, last four digits, expiry) comes from the payments service at
    submission, never from the submitter, and is what the method's answer, its list and the
    console's corporate-accounts rows show."""
    method = owned_method(corp.company, "amex")
    card = EmbeddedPayments().payment_method(method, env_id=str(corp.api.env_id))
    assert card.holder_id == corp.company and card.brand == "amex"
    summary = {"brand": "amex", "last4": card.last4, "exp_month": 12,
               "exp_year": card.exp_year}
    made = corp.api.post(f"{corp.base}/payment-methods", {"payment_method_id": method,
                                                          "label": "Travel card"})
    assert made.status_code == 201, made.text
    assert {k: made.json[k] for k in summary} == summary
    assert len(made.json["last4"]) == 4 and made.json["last4"].isdigit()
    assert made.json["exp_year"] > 2000
    listed = corp.api.get(f"{corp.base}/payment-methods").json["data"]
    assert [{k: m[k] for k in summary} for m in listed] == [summary]
    rows = corp.api.get("/v1/admin/corporate-accounts",
                        params={"company_profile_id": corp.company}).json["data"]
    assert [{k: r[k] for k in summary} for r in rows] == [summary]
    # card fields in the body are not the submitter's to set
    resp = corp.api.post(f"{corp.base}/payment-methods", {
        "payment_method_id": owned_method(corp.company), "last4": "1111"})
    assert resp.status_code == 422, resp.text
    two = corp.api.post(f"{corp.base}/payment-methods",
                        {"payment_method_id": owned_method(corp.company, "visa")}).json
    assert two["brand"] == "visa"


def test_a_resubmitted_method_shows_the_card_the_payments_service_reports_now(corp, ctx):
    """A method kept without its card (submitted before the service was asked) gets it again
    when resubmitted: the approver of the new PENDING reads the card that will be charged."""
    method = _at(corp, S.REJECTED)
    with unit_of_work(ctx):  # as before 063
        CompanyPaymentMethod.update(brand=None, last4=None, exp_month=None,
                                    exp_year=None).where(
            CompanyPaymentMethod.id == method).execute()
    again = _do(corp, method, "resubmit")
    assert again.status_code == 200, again.text
    card = EmbeddedPayments().payment_method(again.json["payment_method_id"], env_id="")
    assert again.json["approval"] == "PENDING"
    assert (again.json["brand"], again.json["last4"], again.json["exp_year"]) == (
        card.brand, card.last4, card.exp_year)
    assert outbox_rows(ctx)[-1].data["last4"] == card.last4


def test_card_data_is_never_accepted_as_a_reference(corp):
    resp = corp.api.post(f"{corp.base}/payment-methods",
                         {"payment_method_id": "4111 1111 1111 1111"})
    assert resp.status_code == 422, resp.text


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("trigger", sorted(TRIGGERS))
def test_every_move_follows_the_transition_table(corp, ctx, state, trigger):
    pm = _at(corp, state)
    action, body = TRIGGERS[trigger]
    before = counts(ctx)
    resp = _do(corp, pm, action, body)
    if COMPANY_PAYMENT_METHOD_MACHINE.can(state, trigger):
        assert resp.status_code == 200, resp.text
        new = COMPANY_PAYMENT_METHOD_MACHINE.transition(state, trigger)
        assert resp.json["approval"] == new.value
        assert resp.json["reason"] == (body["reason"] if new == S.REJECTED else None)
        assert counts(ctx) == (before[0] + 1, before[1] + 1)
        event = outbox_rows(ctx)[-1]
        assert event.type == f"hotel:pms:company_payment_method:{EVENT[trigger]}"
        assert event.data["approval"] == new.value and event.subject == pm
        assert audit_actions(ctx)[-1] == f"company_payment_method.{EVENT[trigger]}"
    else:
        assert_problem(resp, 409, "invalid_transition")
        assert counts(ctx) == before
        listed = corp.api.get(f"{corp.base}/payment-methods").json["data"]
        assert [m["approval"] for m in listed if m["id"] == pm] == [state.value]


def test_the_table_is_the_documented_machine():
    assert {(f.value, t): to.value for (f, t), to in COMPANY_PAYMENT_METHOD_MACHINE.table.items()} == {
        ("PENDING", "approve_postpay"): "POSTPAY",
        ("PENDING", "approve_bill_to_company"): "BILL_TO_COMPANY",
        ("PENDING", "reject"): "REJECTED",
        ("BILL_TO_COMPANY", "approve_postpay"): "POSTPAY",
        ("POSTPAY", "approve_bill_to_company"): "BILL_TO_COMPANY",
        ("POSTPAY", "suspend"): "REJECTED",
        ("BILL_TO_COMPANY", "suspend"): "REJECTED",
        ("REJECTED", "resubmit"): "PENDING",
    }


def test_reject_and_suspend_need_a_reason(corp):
    pm = _submit(corp)["id"]
    assert_problem(_do(corp, pm, "reject", {}), 422)
    assert_problem(_do(corp, pm, "reject", {"reason": ""}), 422)
    assert _do(corp, pm, "approve", {"approval": "POSTPAY"}).status_code == 200
    assert_problem(_do(corp, pm, "suspend", {}), 422)
    assert_problem(_do(corp, pm, "approve", {"approval": "PENDING"}), 422)


def test_the_corporate_checkout_list_shows_only_approved_methods(corp):
    ids = {state: _at(corp, state) for state in S}
    usable = corp.api.get(f"{corp.base}/payment-methods?usable=true").json["data"]
    assert sorted(m["id"] for m in usable) == sorted([ids[S.POSTPAY], ids[S.BILL_TO_COMPANY]])
    every = corp.api.get(f"{corp.base}/payment-methods").json["data"]
    assert sorted(m["id"] for m in every) == sorted(ids.values())


def test_delete_removes_the_reference_in_any_state_with_an_event(corp, ctx):
    for state in S:
        pm = _at(corp, state)
        assert corp.api.delete(f"{corp.base}/payment-methods/{pm}").status_code == 204
        assert outbox_rows(ctx)[-1].type == "hotel:pms:company_payment_method:removed"
        assert audit_actions(ctx)[-1] == "company_payment_method.removed"
    assert corp.api.get(f"{corp.base}/payment-methods").json["data"] == []


# -- who may do what ------------------------------------------------------------------------

def test_a_company_user_may_submit_but_never_approve_reject_or_suspend(corp, ctx):
    admin = corp.traveler()
    corp.bind(admin, "ADMIN")
    for token in (corp.token(admin), corp.token(corp.company)):
        pm = _submit(corp, token)["id"]
        before = counts(ctx)
        for action, body in (("approve", {"approval": "POSTPAY"}),
                             ("approve", {"approval": "BILL_TO_COMPANY"}),
                             ("reject", {"reason": "x"})):
            assert_problem(_do(corp, pm, action, body, token), 403, "guest_not_allowed")
        assert _do(corp, pm, "approve", {"approval": "POSTPAY"}).status_code == 200  # staff
        assert_problem(_do(corp, pm, "suspend", {"reason": "x"}, token), 403,
                       "guest_not_allowed")
        assert counts(ctx) == (before[0] + 1, before[1] + 1)


def test_the_company_admin_resubmits_a_rejected_method(corp):
    admin = corp.traveler()
    corp.bind(admin, "ADMIN")
    pm = _at(corp, S.REJECTED)
    resp = _do(corp, pm, "resubmit", None, corp.token(admin))
    assert resp.status_code == 200 and resp.json["approval"] == "PENDING"
    assert resp.json["reason"] is None


def _pm_cells(corp: Corp, role: str) -> dict[CompanyAction, bool]:
    me = corp.traveler()
    corp.bind(me, role)
    token = corp.token(me)
    pending, approved, rejected = _at(corp, S.PENDING), _at(corp, S.POSTPAY), _at(corp, S.REJECTED)
    cells = {}
    full = corp.api.get(f"{corp.base}/payment-methods", token=token)
    assert full.status_code == 200, full.text
    cells[CompanyAction.LIST_PAYMENT_METHODS] = pending in {m["id"] for m in full.json["data"]}
    usable = corp.api.get(f"{corp.base}/payment-methods?usable=true", token=token)
    assert usable.status_code == 200, usable.text
    assert pending not in {m["id"] for m in usable.json["data"]}
    cells[CompanyAction.LIST_USABLE_PAYMENT_METHODS] = approved in {m["id"]
                                                                    for m in usable.json["data"]}
    submitted = corp.api.post(f"{corp.base}/payment-methods", {"payment_method_id": owned_method(corp.company)},
                              token=token)
    cells[CompanyAction.SUBMIT_PAYMENT_METHOD] = submitted.status_code == 201
    resubmitted = _do(corp, rejected, "resubmit", None, token)
    cells[CompanyAction.RESUBMIT_PAYMENT_METHOD] = resubmitted.status_code == 200
    removed = corp.api.delete(f"{corp.base}/payment-methods/{approved}", token=token)
    cells[CompanyAction.REMOVE_PAYMENT_METHOD] = removed.status_code == 204
    for resp in (submitted, resubmitted, removed):
        if resp.status_code >= 400:
            assert_problem(resp, 403, "company_role_forbidden")
    return cells


@pytest.mark.parametrize("role", [r.value for r in CompanyRole])
def test_payment_method_routes_follow_the_role_table(corp, role):
    cells = _pm_cells(corp, role)
    assert cells == {action: action in ROLE_ACTIONS[CompanyRole(role)] for action in cells}


def test_a_traveler_of_another_company_gets_404_for_these_methods(corp):
    pm = _submit(corp)["id"]
    stranger = corp.traveler()
    corp.bind(stranger, "ADMIN", company=corp.other_company)
    token = corp.token(stranger)
    assert_problem(corp.api.get(f"{corp.base}/payment-methods", token=token), 404)
    assert_problem(corp.api.delete(f"{corp.base}/payment-methods/{pm}", token=token), 404)
    assert_problem(_do(corp, pm, "resubmit", None, token), 404)
    # the method addressed through the stranger's own company: 404 as well
    other = corp.base.replace(corp.company, corp.other_company)
    assert_problem(corp.api.delete(f"{other}/payment-methods/{pm}", token=token), 404)
    assert_problem(corp.api.post(f"{other}/payment-methods/{pm}/approve",
                                 {"approval": "POSTPAY"}), 404)


def test_billing_to_the_company_needs_its_receivable_account(api, ctx):
    corp = make_corp(api)
    pm = _submit(corp)["id"]
    before = counts(ctx)
    assert_problem(_do(corp, pm, "approve", {"approval": "BILL_TO_COMPANY"}), 409,
                   "receivable_account_required")
    assert counts(ctx) == before
    assert _do(corp, pm, "approve", {"approval": "POSTPAY"}).status_code == 200
    assert_problem(_do(corp, pm, "approve", {"approval": "BILL_TO_COMPANY"}), 409,
                   "receivable_account_required")
    corp.api.put(f"{corp.base}/receivable-account", {"credit_limit": "100.00",
                                                     "currency": "EUR"})
    resp = _do(corp, pm, "approve", {"approval": "BILL_TO_COMPANY"})
    assert resp.status_code == 200 and resp.json["approval"] == "BILL_TO_COMPANY"


def test_the_receivable_account_is_set_by_staff_changed_and_audited(api, ctx):
    corp = make_corp(api)
    url = f"{corp.base}/receivable-account"
    assert_problem(corp.api.get(url), 404)
    created = corp.api.put(url, {"credit_limit": "2500.00", "currency": "EUR"})
    assert created.status_code == 201, created.text
    assert created.json["credit_limit"] == "2500.00" and created.json["currency"] == "EUR"
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_receivable_account:created"
    snapshot = counts(ctx)
    same = corp.api.put(url, {"credit_limit": "2500.00", "currency": "EUR"})
    assert same.status_code == 200 and counts(ctx) == snapshot
    changed = corp.api.put(url, {"credit_limit": "4000.00", "currency": "EUR"})
    assert changed.status_code == 200 and changed.json["credit_limit"] == "4000.00"
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_receivable_account:updated"
    assert audit_actions(ctx)[-1] == "company_receivable_account.updated"
    assert corp.api.get(url).json["credit_limit"] == "4000.00"
    for bad in ({"credit_limit": "10.001", "currency": "EUR"},
                {"credit_limit": 10, "currency": "EUR"},
                {"credit_limit": "-1.00", "currency": "EUR"},
                {"credit_limit": "1.00", "currency": "eur"}):
        assert_problem(corp.api.put(url, bad), 422)
    token = corp.token(corp.company)
    assert_problem(corp.api.get(url, token=token), 403, "guest_not_allowed")
    assert_problem(corp.api.put(url, {"credit_limit": "9.00", "currency": "EUR"}, token=token),
                   403, "guest_not_allowed")
