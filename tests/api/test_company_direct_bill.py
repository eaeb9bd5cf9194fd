"""Direct bill to a company through the HTTP API, on SQLite and PostgreSQL.

A stay billed to a company through a BILL_TO_COMPANY method has its folio balance moved, at
check-out, to the company's receivable account (a DIRECT_BILL payment on the folio, the
account's open_balance, a ledger posting to `company_receivable:<company>` made on demand);
the credit limit is checked against the whole exposure (receivable, open folios, future stays)
at booking, when a stay is routed to the company and at check-out. A POSTPAY method is charged
through the payments service after the stay. A stay routed with a cap shows, before check-out,
what the company pays and what the guest pays.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.models import Folio, FolioCharge, FolioPayment, LedgerPosting
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import assert_problem, counts, outbox_rows, owned_method, random_ref

# make_booking_hotel prices a night at 100.00 (no taxes)


@dataclass
class Corp:
    api: Any
    ctx: Any
    platform: Any
    hotel: Any
    company: str
    base: str
    bill: str
    postpay: str

    @property
    def res(self) -> str:
        return f"/v1/properties/{self.hotel.id}/reservations"

    def method(self, approval: str, ref: str | None = None) -> str:
        pm = self.api.post(f"{self.base}/payment-methods", {
            "payment_method_id": ref or owned_method(self.company)}).json["id"]
        assert self.api.post(f"{self.base}/payment-methods/{pm}/approve",
                             {"approval": approval}).status_code == 200
        return pm

    def book(self, method: str | None = None, nights: int = 1, **over: Any) -> str:
        body = reservation_body(self.hotel, departure_date=(
            self.hotel.today + timedelta(days=nights)).isoformat(), **over)
        if method is not None:
            body.update(company_profile_id=self.company, company_payment_method_id=method)
        resp = self.api.post(self.res, body)
        assert resp.status_code == 201, resp.text
        return resp.json["id"]

    def check_in(self, res_id: str) -> None:
        resp = self.api.post(f"{self.res}/{res_id}/check-in", {})
        assert resp.status_code == 200, resp.text

    def check_out(self, res_id: str) -> Any:
        return self.api.post(f"{self.res}/{res_id}/check-out", None)

    def limit(self, amount: str) -> None:
        assert self.api.put(f"{self.base}/receivable-account", {
            "credit_limit": amount, "currency": self.hotel.prop.currency_code}
        ).status_code in (200, 201)

    def account(self) -> dict[str, Any]:
        return self.api.get(f"{self.base}/receivable-account").json

    def folio(self, res_id: str) -> Any:
        with read_scope(self.ctx):
            return Folio.get(Folio.reservation == uuid.UUID(res_id), Folio.folio_type == "GUEST")

    def charge(self, res_id: str, amount: str) -> None:
        """A posted charge on the stay's guest folio (test setup, as tests.factories.pay_folio
        records a payment)."""
        folio = self.folio(res_id)
        with unit_of_work(self.ctx):
            FolioCharge.create(folio=folio.id, reservation=folio.reservation_id,
                               property_id=folio.property_id, category="other",
                               description="Meeting room", amount=Decimal(amount),
                               currency=folio.currency, business_date=self.hotel.today)

    def pay(self, res_id: str, amount: str) -> None:
        folio = self.folio(res_id)
        with unit_of_work(self.ctx):
            FolioPayment.create(folio=folio.id, amount=Decimal(amount), currency=folio.currency,
                                method="CASH", status="CAPTURED")


@pytest.fixture
def corp(settings, database, clock, env_id, ctx) -> Corp:
    """An app whose platform sandboxes (payments, ledger) this test can look into."""
    import falcon.testing

    from pms.app import create_app
    from pms.platform import build_platform
    from tests.conftest import Api

    platform = build_platform(settings)
    api = Api(falcon.testing.TestClient(create_app(settings, db=database, clock=clock,
                                                   platform=platform)), settings, env_id)
    hotel = make_booking_hotel(ctx, rooms=6)
    company = api.post(f"/v1/properties/{hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]
    base = f"/v1/properties/{hotel.id}/companies/{company}"
    c = Corp(api, ctx, platform, hotel, company, base, "", "")
    c.limit("500.00")
    c.bill, c.postpay = c.method("BILL_TO_COMPANY"), c.method("POSTPAY")
    return c


def _events(ctx: Any, type_: str) -> list[Any]:
    return [e for e in outbox_rows(ctx) if e.type == type_]


def test_check_out_moves_the_folio_balance_to_the_companys_receivable_account(corp, ctx):
    res = corp.book(corp.bill)
    corp.check_in(res)
    resp = corp.check_out(res)
    assert resp.status_code == 200, resp.text
    folio = corp.api.get(f"{corp.res}/{res}/folio").json
    assert folio["status"] == "CLOSED" and Decimal(folio["posted_balance"]) == 0
    [direct] = [p for p in folio["payments"] if p["method"] == "DIRECT_BILL"]
    assert direct["amount"] == "100.00" and direct["status"] == "CAPTURED"
    assert corp.account()["open_balance"] == "100.00"
    [event] = _events(ctx, "hotel:pms:company_receivable_account:direct_billed")
    assert event.data["amount"] == "100.00" and event.data["reservation_id"] == res
    # the ledger: the company's receivable account, made on demand, holds the balance
    from pms.services.cashiering.ledger_postings import reconcile_postings

    ledger = corp.platform.ledger
    account = f"company_receivable:{corp.company}"
    assert ledger.balance(env_id := corp.api.env_id, account) == Decimal("100.00")  # sent
    reconcile_postings(ctx, ledger)  # the room night's posting (the night audit's sender)
    assert ledger.balance(env_id, "guest_ledger") == Decimal("0.00")  # night in, moved out
    with read_scope(ctx):
        assert {p.status for p in LedgerPosting.select().where(
            LedgerPosting.idempotency_key == f"direct-bill:{direct['id']}")} == {"POSTED"}


def test_the_companys_ledger_account_is_made_once_per_env_and_postings_are_idempotent(corp, ctx):
    from pms.services.cashiering.ledger_postings import reconcile_postings

    for _ in range(2):
        res = corp.book(corp.bill)
        corp.check_in(res)
        assert corp.check_out(res).status_code == 200
    ledger = corp.platform.ledger
    made = [k for k in ledger.accounts if k[1] == f"company_receivable:{corp.company}"]
    assert made == [(str(corp.api.env_id), f"company_receivable:{corp.company}")]
    reconcile_postings(ctx, ledger)
    before = len(ledger.postings)
    reconcile_postings(ctx, ledger)  # nothing PENDING: nothing booked again
    assert len(ledger.postings) == before
    assert ledger.balance(corp.api.env_id, made[0][1]) == Decimal("200.00")
    assert corp.account()["open_balance"] == "200.00"


def test_check_out_over_the_credit_limit_is_409_with_the_exposure_and_writes_nothing(corp, ctx):
    res = corp.book(corp.bill)
    corp.check_in(res)
    corp.charge(res, "450.00")  # the stay now owes 550.00 with its night, the limit is 500.00
    before = counts(ctx)
    problem = assert_problem(corp.check_out(res), 409, "credit_limit_exceeded")
    assert problem["credit_limit"] == "500.00" and problem["needed"] == "550.00"
    assert problem["exposure"] == {"total": "0.00", "receivable": "0.00",
                                   "open_folios": "0.00", "future_stays": "0.00"}
    assert counts(ctx) == before
    assert corp.api.get(f"{corp.res}/{res}").json["status"] == "CHECKED_IN"
    assert corp.account()["open_balance"] == "0.00"
    corp.limit("600.00")
    assert corp.check_out(res).status_code == 200
    assert corp.account()["open_balance"] == "550.00"


def test_the_exposure_counts_the_receivable_open_folios_and_future_stays(corp):
    corp.limit("1000.00")
    gone = corp.book(corp.bill)
    corp.check_in(gone)
    assert corp.check_out(gone).status_code == 200           # receivable 100.00
    in_house = corp.book(corp.bill, nights=3)
    corp.check_in(in_house)
    corp.charge(in_house, "150.00")                          # open folio 150.00
    corp.book(corp.bill, nights=4)                            # future stay 400.00
    corp.book(corp.postpay, nights=4)                         # POSTPAY: never on the account
    problem = assert_problem(corp.api.post(corp.res, {
        **reservation_body(corp.hotel, departure_date=(
            corp.hotel.today + timedelta(days=4)).isoformat()),
        "company_profile_id": corp.company, "company_payment_method_id": corp.bill}),
        409, "credit_limit_exceeded")
    assert problem["exposure"] == {"total": "650.00", "receivable": "100.00",
                                   "open_folios": "150.00", "future_stays": "400.00"}
    assert problem["needed"] == "400.00"
    # 350.00 are left: a stay of three nights fits
    corp.book(corp.bill, nights=3)


def test_routing_a_stay_to_the_company_shows_who_pays_what_before_check_out(corp, ctx):
    res = corp.book()  # booked without a company
    corp.check_in(res)
    url = f"{corp.res}/{res}/company-billing"
    assert_problem(corp.api.get(url), 404)
    corp.charge(res, "30.00")
    resp = corp.api.put(url, {"company_profile_id": corp.company,
                              "company_payment_method_id": corp.bill, "cap": "100.00"})
    assert resp.status_code == 200, resp.text
    [event] = _events(ctx, "hotel:pms:reservation:routed_to_company")
    assert event.data["company_payment_method_id"] == corp.bill and event.data["cap"] == "100.00"
    preview = corp.api.get(url).json
    # the night check-out would post (projected) and the meeting room: 130.00
    assert (preview["basis"], preview["balance"], preview["company_pays"],
            preview["guest_pays"]) == ("folio", "130.00", "100.00", "30.00")
    assert preview["approval"] == "BILL_TO_COMPANY"
    # the same routing again changes nothing
    before = counts(ctx)
    assert corp.api.put(url, {"company_profile_id": corp.company,
                              "company_payment_method_id": corp.bill,
                              "cap": "100.00"}).status_code == 200
    assert counts(ctx) == before
    # the guest's part is the guest's: check-out waits for it
    problem = assert_problem(corp.check_out(res), 409, "folio_not_closable")
    assert problem["balance"] == "30.00"
    corp.pay(res, "30.00")
    assert corp.check_out(res).status_code == 200
    assert corp.account()["open_balance"] == "100.00"


def test_routing_is_checked_against_the_credit_limit(corp, ctx):
    corp.book(corp.bill, nights=4)  # 400.00 of 500.00
    confirmed = corp.book(nights=2)
    url = f"{corp.res}/{confirmed}/company-billing"
    before = counts(ctx)
    problem = assert_problem(corp.api.put(url, {"company_profile_id": corp.company,
                                                "company_payment_method_id": corp.bill}),
                             409, "credit_limit_exceeded")
    assert problem["needed"] == "200.00" and problem["exposure"]["future_stays"] == "400.00"
    assert counts(ctx) == before
    assert_problem(corp.api.get(url), 404)
    # under a cap of 100.00 it fits
    resp = corp.api.put(url, {"company_profile_id": corp.company,
                              "company_payment_method_id": corp.bill, "cap": "100.00"})
    assert resp.status_code == 200, resp.text
    assert (resp.json["basis"], resp.json["company_pays"], resp.json["guest_pays"]) == (
        "guaranteed_amount", "100.00", "100.00")
    # an unapproved method or another company's is refused; a POSTPAY one is not limited
    other = corp.api.post(f"/v1/properties/{corp.hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]
    assert_problem(corp.api.put(url, {"company_profile_id": other,
                                      "company_payment_method_id": corp.bill}), 422)
    assert corp.api.put(url, {"company_profile_id": corp.company,
                              "company_payment_method_id": corp.postpay}).status_code == 200


def test_a_postpay_method_is_charged_through_the_payments_service_after_the_stay(corp, ctx):
    res = corp.book(corp.postpay)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    folio = corp.api.get(f"{corp.res}/{res}/folio").json
    [paid] = [p for p in folio["payments"] if p["method"] == "CARD"]
    assert paid["status"] == "CAPTURED" and paid["amount"] == "100.00"
    with read_scope(ctx):
        row = FolioPayment.get_by_id(uuid.UUID(paid["id"]))
    charge = next(c for c in corp.platform.payments.charges.values()
                  if c["id"] == row.external_id)
    assert charge["status"] == "succeeded"
    assert folio["status"] == "CLOSED" and Decimal(folio["posted_balance"]) == 0
    assert corp.account()["open_balance"] == "0.00"  # POSTPAY never reaches the account


def test_a_declined_postpay_charge_leaves_the_balance_on_the_closed_folio(corp):
    declining = corp.method("POSTPAY", ref=owned_method(corp.company, "declined"))
    res = corp.book(declining)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200  # the stay is over; the charge is after it
    folio = corp.api.get(f"{corp.res}/{res}/folio").json
    assert [p["status"] for p in folio["payments"]] == ["FAILED"]
    assert folio["posted_balance"] == "100.00"


def test_a_stay_whose_method_was_suspended_is_paid_by_the_guest(corp):
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.api.post(f"{corp.base}/payment-methods/{corp.bill}/suspend",
                         {"reason": "unpaid invoices"}).status_code == 200
    preview = corp.api.get(f"{corp.res}/{res}/company-billing").json
    assert (preview["company_pays"], preview["guest_pays"]) == ("0.00", "100.00")
    assert_problem(corp.check_out(res), 409, "folio_not_closable")


def test_company_billing_routes_are_staff_only(corp):
    from pms.devkeys import mint_token

    res = corp.book(corp.bill)
    token = mint_token(corp.api.settings, env_id=corp.api.env_id, client_kind="user",
                       holder_id=corp.company)
    url = f"{corp.res}/{res}/company-billing"
    assert corp.api.get(url, token=token).status_code in (403, 404)
    assert corp.api.put(url, {"company_profile_id": corp.company,
                              "company_payment_method_id": corp.bill},
                        token=token).status_code in (403, 404)


def test_corporate_lists_are_paginated_by_cursor(corp):
    for _ in range(3):
        corp.method("POSTPAY")
    url = f"{corp.base}/payment-methods"
    seen, cursor = [], None
    while True:
        page = corp.api.get(url, params={"limit": 2, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        assert len(page.json["data"]) <= 2
        seen += [m["id"] for m in page.json["data"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 5  # the fixture's two and these three
    for tail in ("/users", "/credit-overrides"):
        resp = corp.api.get(corp.base + tail, params={"limit": 1})
        assert resp.status_code == 200 and "next_cursor" in resp.json
    assert_problem(corp.api.get(url, params={"cursor": "not-a-cursor"}), 422, "invalid_cursor")


def _audited(ctx: Any, action: str) -> int:
    from tests.helpers import audit_actions

    return audit_actions(ctx).count(action)


def _marked(ctx: Any, res_id: str) -> bool:
    from pms.models import Reservation

    with read_scope(ctx):
        return Reservation.get_by_id(uuid.UUID(res_id)).company_billed


def test_removing_a_routing_bills_the_guest_again(corp, ctx):
    res = corp.book(corp.bill, nights=2)
    url = f"{corp.res}/{res}/company-billing"
    assert _marked(ctx, res)
    assert corp.account()["exposure"]["future_stays"] == "200.00"
    resp = corp.api.delete(url)
    assert resp.status_code == 204, resp.text
    [event] = _events(ctx, "hotel:pms:reservation:unrouted_from_company")
    assert event.data["company_payment_method_id"] == corp.bill
    assert event.data["reservation_id"] == res
    assert _audited(ctx, "reservation.unrouted_from_company") == 1
    assert not _marked(ctx, res)  # check-out reads no routing again
    assert_problem(corp.api.get(url), 404)
    assert_problem(corp.api.delete(url), 404)  # nothing left to remove
    assert corp.account()["exposure"]["future_stays"] == "0.00"
    corp.check_in(res)  # the guest pays: check-out waits for it
    assert_problem(corp.check_out(res), 409, "folio_not_closable")
    assert corp.account()["open_balance"] == "0.00"


def test_a_routing_cannot_be_removed_after_check_out_nor_by_a_holder(corp, ctx):
    from pms.devkeys import mint_token

    res = corp.book(corp.bill)
    url = f"{corp.res}/{res}/company-billing"
    token = mint_token(corp.api.settings, env_id=corp.api.env_id, client_kind="user",
                       holder_id=corp.company)
    assert corp.api.delete(url, token=token).status_code in (403, 404)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    before = counts(ctx)
    assert_problem(corp.api.delete(url), 409, "reservation_not_editable")
    assert counts(ctx) == before
    assert corp.account()["open_balance"] == "100.00"


def test_reverting_a_check_out_reverses_the_direct_bill_through_the_ledger(corp, ctx):
    from pms.services.cashiering.ledger_postings import reconcile_postings
    from pms.services.corporate.company_direct_bill import reverse_direct_bill

    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    ledger, account = corp.platform.ledger, f"company_receivable:{corp.company}"
    assert ledger.balance(corp.api.env_id, account) == Decimal("100.00")
    resp = corp.api.post(f"{corp.res}/{res}/revert", {"reason": "guest stays on"})
    assert resp.status_code == 200, resp.text
    assert resp.json["status"] == "CHECKED_IN"
    assert corp.account()["open_balance"] == "0.00"
    assert ledger.balance(corp.api.env_id, account) == Decimal("0.00")  # sent after commit
    folio = corp.api.get(f"{corp.res}/{res}/folio").json
    assert folio["status"] == "OPEN" and folio["posted_balance"] == "100.00"
    [event] = _events(ctx, "hotel:pms:company_receivable_account:direct_bill_reversed")
    assert event.data["amount"] == "100.00" and event.data["open_balance"] == "0.00"
    assert _audited(ctx, "company_receivable_account.direct_bill_reversed") == 1
    with read_scope(ctx):
        [direct] = FolioPayment.select().where(FolioPayment.method == "DIRECT_BILL",
                                               FolioPayment.kind == "PAYMENT")
        [back] = FolioPayment.select().where(FolioPayment.refund_of == direct.id)
        assert (back.kind, back.amount, back.status) == ("REFUND", Decimal("-100.00"),
                                                         "CAPTURED")
        assert LedgerPosting.get(
            LedgerPosting.idempotency_key == f"direct-bill-reversal:{direct.id}"
        ).status == "POSTED"
    # the reversal again (a retried hook) writes and sends nothing more
    before, sent = counts(ctx), len(ledger.postings)
    from pms.models import Reservation

    with unit_of_work(ctx) as uow:
        reverse_direct_bill(uow, Reservation.get_by_id(uuid.UUID(res)), ledger=ledger)
    reconcile_postings(ctx, ledger)
    assert counts(ctx) == before
    assert corp.account()["open_balance"] == "0.00"
    assert ledger.balance(corp.api.env_id, account) == Decimal("0.00")
    assert len([p for p in ledger.postings if "reversal" in str(p)]) <= sent
    # checked out again: billed again, once
    assert corp.check_out(res).status_code == 200
    assert corp.account()["open_balance"] == "100.00"
    assert ledger.balance(corp.api.env_id, account) == Decimal("100.00")


def test_reverting_a_check_out_without_company_billing_touches_no_account(corp, ctx):
    res = corp.book()
    corp.check_in(res)
    corp.pay(res, "100.00")
    assert corp.check_out(res).status_code == 200
    assert corp.api.post(f"{corp.res}/{res}/revert", {"reason": "x"}).status_code == 200
    assert not _events(ctx, "hotel:pms:company_receivable_account:direct_bill_reversed")
    assert corp.account()["open_balance"] == "0.00"


def test_a_payment_against_the_receivable_account_frees_the_credit_limit(corp, ctx):
    from pms.devkeys import mint_token

    corp.limit("150.00")
    res = corp.book(corp.bill)
    corp.check_in(res)
    assert corp.check_out(res).status_code == 200
    view = corp.account()
    assert (view["open_balance"], view["exposure"]["receivable"], view["available"]) == (
        "100.00", "100.00", "50.00")
    problem = assert_problem(corp.api.post(corp.res, {
        **reservation_body(corp.hotel), "company_profile_id": corp.company,
        "company_payment_method_id": corp.bill}), 409, "credit_limit_exceeded")
    assert problem["exposure"]["receivable"] == "100.00"
    url = f"{corp.base}/receivable-account/payments"
    cur = corp.hotel.prop.currency_code
    body = {"amount": "60.00", "currency": cur, "reference": "WIRE-1"}
    key = {"Idempotency-Key": uuid.uuid4().hex}
    resp = corp.api.post(url, body, headers=key)
    assert resp.status_code == 201, resp.text
    assert resp.json["account"]["open_balance"] == "40.00"
    assert resp.json["account"]["available"] == "110.00"
    again = corp.api.post(url, body, headers=key)  # the retry is answered, not booked again
    assert again.status_code == 201 and again.json["id"] == resp.json["id"]
    assert corp.account()["open_balance"] == "40.00"
    [event] = _events(ctx, "hotel:pms:company_receivable_account:payment_received")
    assert event.data["amount"] == "60.00" and event.data["reference"] == "WIRE-1"
    assert _audited(ctx, "company_receivable_account.payment_received") == 1
    ledger = corp.platform.ledger
    assert ledger.balance(corp.api.env_id, f"company_receivable:{corp.company}") == \
        Decimal("40.00")
    corp.book(corp.bill)  # 40.00 + 100.00 fits under 150.00 now
    # refused: more than owed, another currency, nothing, a holder
    before = counts(ctx)
    problem = assert_problem(corp.api.post(url, {**body, "amount": "40.01"}), 409,
                             "receivable_overpaid")
    assert problem["open_balance"] == "40.00"
    other = "USD" if cur != "USD" else "EUR"
    assert_problem(corp.api.post(url, {**body, "currency": other}), 422)
    assert_problem(corp.api.post(url, {**body, "amount": "0.00"}), 422)
    token = mint_token(corp.api.settings, env_id=corp.api.env_id, client_kind="user",
                       holder_id=corp.company)
    assert corp.api.post(url, body, token=token).status_code in (403, 404)
    assert corp.api.get(f"{corp.base}/receivable-account", token=token).status_code in (403, 404)
    assert counts(ctx) == before


def test_a_payment_needs_a_receivable_account(api, ctx):
    from tests.factories import make_booking_hotel

    hotel = make_booking_hotel(ctx, rooms=1)
    company = api.post(f"/v1/properties/{hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]
    assert_problem(api.post(f"/v1/properties/{hotel.id}/companies/{company}"
                            "/receivable-account/payments",
                            {"amount": "1.00", "currency": "EUR", "reference": "r"}), 404)


def test_every_direct_bill_mutation_writes_its_event_and_its_audit_row(corp, ctx):
    """One sweep over the corporate billing mutations: each writes the event it names and the
    audit row of the same action, through the unit of work."""
    from pms.devkeys import mint_token
    from tests.helpers import audit_actions

    res = corp.book()
    corp.check_in(res)
    url = f"{corp.res}/{res}/company-billing"
    second = mint_token(corp.api.settings, env_id=corp.api.env_id, sub="second-staff")
    steps = [
        ("company_receivable_account", "updated", lambda: corp.limit("900.00")),
        ("reservation", "routed_to_company", lambda: corp.api.put(url, {
            "company_profile_id": corp.company, "company_payment_method_id": corp.bill})),
        ("reservation", "unrouted_from_company", lambda: corp.api.delete(url)),
        ("reservation", "routed_to_company", lambda: corp.api.put(url, {
            "company_profile_id": corp.company, "company_payment_method_id": corp.bill})),
        ("company_receivable_account", "direct_billed", lambda: corp.check_out(res)),
        ("company_receivable_account", "direct_bill_reversed",
         lambda: corp.api.post(f"{corp.res}/{res}/revert", {"reason": "back"})),
        ("company_receivable_account", "direct_billed", lambda: corp.check_out(res)),
        ("company_receivable_account", "payment_received", lambda: corp.api.post(
            f"{corp.base}/receivable-account/payments", {
                "amount": "10.00", "currency": corp.hotel.prop.currency_code,
                "reference": "WIRE"})),
    ]
    override = None
    for aggregate, action, call in steps:
        events, audits = len(outbox_rows(ctx)), len(audit_actions(ctx))
        resp = call()
        assert resp is None or resp.status_code < 300, (action, resp.text)
        assert f"hotel:pms:{aggregate}:{action}" in [e.type for e in outbox_rows(ctx)[events:]]
        assert f"{aggregate}.{action}" in audit_actions(ctx)[audits:]
    override = corp.api.post(f"{corp.base}/credit-overrides", {
        "amount": "50.00", "currency": corp.hotel.prop.currency_code, "reason": "event",
        "expires_at": (corp.hotel.today + timedelta(days=5)).isoformat() + "T00:00:00Z"})
    assert override.status_code == 201, override.text
    assert corp.api.post(f"{corp.base}/credit-overrides/{override.json['id']}/approve", None,
                         token=second).status_code == 200
    actions = audit_actions(ctx)
    assert {"company_credit_override.requested", "company_credit_override.approved"} <= set(
        actions)
