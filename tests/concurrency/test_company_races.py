"""Corporate accounts under concurrency, on PostgreSQL:
- two (or twelve) admin provisionings of one company at once produce one ADMIN;
- a concurrent approve and reject of one company payment method: one wins, the other 409;
- two payments at once against a company's receivable account never take more than it owes.
Each over real HTTP in parallel (gunicorn, 4 workers), plus an in-process control with the row
locks off (the TEST-ONLY wiring of pms.wiring) that shows the race the lock prevents.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import msgspec
import psycopg2
import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope, unit_of_work
from pms.models import CompanyPaymentMethod, CompanyReceivableAccount, CompanyUser, OutboxEvent
from pms.platform.payments import EmbeddedPayments
from pms.schemas.companies import (
    AdminProvisioningIn,
    CompanyPaymentMethodIn,
    ReceivableAccountIn,
    ReceivablePaymentIn,
)
from pms.services.corporate import admin_provisioning, receivable_accounts, receivables
from pms.services.corporate import company_payment_methods as cpm
from tests import pg
from tests.concurrency.conftest import fire
from tests.factories import make_booking_hotel, make_profile, reservation_body
from tests.helpers import owned_method, random_ref

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PAYMENTS = EmbeddedPayments()  # the sandbox reports owned_method(company) as the company's


def _company(ctx: Any, hotel: Any) -> Any:
    company = make_profile(ctx, hotel.id, kind="COMPANY", company_name=random_ref("Co"),
                           first_name=None, last_name=None, email=None)
    receivable_accounts.set_receivable_account(ctx, hotel.id, company.id, msgspec.convert(
        {"credit_limit": "1000.00", "currency": "EUR"}, ReceivableAccountIn))
    return company


def _admins(ctx: Any, company_id: Any) -> list[Any]:
    with read_scope(ctx):
        return list(CompanyUser.select().where(CompanyUser.company_profile_id == company_id,
                                               CompanyUser.role == "ADMIN"))


def _events(ctx: Any, type_: str, subject: Any) -> int:
    with read_scope(ctx):
        return OutboxEvent.select().where(OutboxEvent.type == type_,
                                          OutboxEvent.subject == str(subject)).count()


# -- over HTTP --------------------------------------------------------------------------------

@pytest.mark.parametrize("same_email", [False, True])
def test_parallel_admin_provisionings_produce_one_admin(pms_server, pg_db, ctx, same_email):
    hotel = make_booking_hotel(ctx, rooms=1)
    company = _company(ctx, hotel)
    url = (f"{pms_server.base_url}/v1/properties/{hotel.id}/companies/{company.id}"
           "/admin-provisioning")
    headers = pms_server.headers(ctx.env_id)
    shared = f"{random_ref('one')}@acme.example"

    def send(i: int, session: Any) -> tuple[int, Any]:
        email = shared if same_email else f"{random_ref(f'a{i}')}@acme.example"
        resp = session.put(url, json={"email": email, "first_name": "A", "last_name": str(i)},
                           headers=headers, timeout=60)
        return resp.status_code, resp.json().get("code") or resp.json()["admin_profile_ids"]

    results = fire(12, send)
    statuses = Counter(status for status, _ in results)
    expected = Counter({200: 12}) if same_email else Counter({200: 1, 409: 11})
    assert statuses == expected, (results, pms_server.log_tail())
    if not same_email:
        assert {code for status, code in results if status == 409} == {"company_admin_exists"}
    (admin,) = _admins(ctx, company.id)
    assert _events(ctx, "hotel:pms:company:admin_provisioned", company.id) == 1
    assert all(body == [str(admin.traveler_profile_id)] for status, body in results
               if status == 200)


def test_parallel_approve_and_reject_of_one_method_one_wins_the_other_409(pms_server, pg_db,
                                                                          ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    company = _company(ctx, hotel)
    base = f"{pms_server.base_url}/v1/properties/{hotel.id}/companies/{company.id}"
    headers = pms_server.headers(ctx.env_id)
    methods = [cpm.submit(ctx, hotel.id, company.id, CompanyPaymentMethodIn(
        payment_method_id=owned_method(company.id)), payments=PAYMENTS).id for _ in range(8)]
    moves = [("approve", {"approval": "BILL_TO_COMPANY"}), ("reject", {"reason": "no"})]

    def send(i: int, session: Any) -> tuple[int, str, Any]:
        pm, (action, body) = methods[i // 2], moves[i % 2]
        resp = session.post(f"{base}/payment-methods/{pm}/{action}", json=body,
                            headers=headers, timeout=60)
        data = resp.json()
        return resp.status_code, action, data["approval"] if resp.status_code == 200 else data["code"]

    results = fire(16, send)
    for n, pm in enumerate(methods):
        pair = results[2 * n: 2 * n + 2]
        assert sorted(status for status, _, _ in pair) == [200, 409], (pair, pms_server.log_tail())
        (winner,) = [status_of for status, _, status_of in pair if status == 200]
        (loser,) = [code for status, _, code in pair if status == 409]
        assert loser == "invalid_transition"
        with read_scope(ctx):
            assert CompanyPaymentMethod.get_by_id(pm).status == winner
        moved = sum(_events(ctx, f"hotel:pms:company_payment_method:{a}", pm)
                    for a in ("approved", "rejected"))
        assert moved == 1


# -- the in-process control: the same race with the row locks off ------------------------------

def _lock_waiters(dbname: str) -> int:
    conn = psycopg2.connect(pg.admin_url())
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                        "AND wait_event_type = 'Lock'", (dbname,))
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def _race(dbname: str, ctx: Any, first: Any, second: Any) -> dict[str, Any]:
    """`first(uow)` inside a unit of work held open until the second waits on a lock or is
    done; `second()` starts once the first has done its work. Returns their outcomes."""
    first_in, second_done, outcome = threading.Event(), threading.Event(), {}

    def one() -> None:
        try:
            with unit_of_work(ctx) as uow:
                outcome["first"] = first(uow)
                first_in.set()
                deadline = time.monotonic() + 20
                while (not second_done.is_set() and _lock_waiters(dbname) == 0
                       and time.monotonic() < deadline):
                    time.sleep(0.05)
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            outcome["first"] = exc
        finally:
            first_in.set()
            db.close()

    def two() -> None:
        first_in.wait(20)
        try:
            outcome["second"] = second()
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            outcome["second"] = exc
        finally:
            second_done.set()
            db.close()

    threads = [threading.Thread(target=one), threading.Thread(target=two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outcome



@pytest.mark.parametrize("locking", [True, False], ids=["locked", "control-unlocked"])
def test_two_provisionings_at_once_produce_one_admin_and_the_control_shows_two(
        ctx, pg_db, pg_database, locking):
    hotel = make_booking_hotel(ctx, rooms=1)
    company = _company(ctx, hotel)

    def body(tag: str) -> AdminProvisioningIn:
        return msgspec.convert({"email": f"{random_ref(tag)}@acme.example", "first_name": "A",
                                "last_name": tag}, AdminProvisioningIn)

    with wiring.installed(locking_enabled=locking):
        outcome = _race(
            pg_database.name, ctx,
            lambda uow: admin_provisioning.provision_in(uow, ctx, hotel.id, company.id, body("one")),
            lambda: admin_provisioning.provision_admin(ctx, hotel.id, company.id, body("two")))
    admins = _admins(ctx, company.id)
    assert not isinstance(outcome["first"], Exception), outcome
    if locking:
        assert getattr(outcome["second"], "code", None) == "company_admin_exists", outcome
        assert len(admins) == 1
    else:  # the control: without the company lock both see "no ADMIN yet"
        assert not isinstance(outcome["second"], Exception), outcome
        assert len(admins) == 2


@pytest.mark.parametrize("locking", [True, False], ids=["locked", "control-unlocked"])
def test_approve_and_reject_at_once_one_wins_and_the_control_lets_both_through(
        ctx, pg_db, pg_database, locking):
    hotel = make_booking_hotel(ctx, rooms=1)
    company = _company(ctx, hotel)
    pm = cpm.submit(ctx, hotel.id, company.id, CompanyPaymentMethodIn(
        payment_method_id=owned_method(company.id)), payments=PAYMENTS).id
    with wiring.installed(locking_enabled=locking):
        outcome = _race(
            pg_database.name, ctx,
            lambda uow: cpm.move_in(uow, ctx, hotel.id, company.id, pm,
                                    "approve_bill_to_company"),
            lambda: cpm.move(ctx, hotel.id, company.id, pm, "reject", reason="no"))
    assert outcome["first"].approval == "BILL_TO_COMPANY", outcome
    decisions = (_events(ctx, "hotel:pms:company_payment_method:approved", pm)
                 + _events(ctx, "hotel:pms:company_payment_method:rejected", pm))
    if locking:
        assert getattr(outcome["second"], "code", None) == "invalid_transition", outcome
        assert decisions == 1
        with read_scope(ctx):
            assert CompanyPaymentMethod.get_by_id(pm).status == "BILL_TO_COMPANY"
    else:  # the control: both decisions accepted, the last one silently overwrites
        assert outcome["second"].approval == "REJECTED", outcome
        assert decisions == 2


@pytest.mark.parametrize("locking", [True, False], ids=["locked", "control-unlocked"])
def test_two_receivable_payments_at_once_never_pay_more_than_owed_and_the_control_does(
        ctx, pg_db, pg_database, locking):
    hotel = make_booking_hotel(ctx, rooms=1)
    company = _company(ctx, hotel)
    with unit_of_work(ctx):  # the company owes 100.00 (as a direct bill at check-out leaves it)
        CompanyReceivableAccount.update(open_balance=100).where(
            CompanyReceivableAccount.company_profile_id == company.id).execute()
    pay = msgspec.convert({"amount": "60.00", "currency": "EUR", "reference": "WIRE"},
                          ReceivablePaymentIn)
    with wiring.installed(locking_enabled=locking):
        outcome = _race(
            pg_database.name, ctx,
            lambda uow: receivables.receive_in(uow, ctx, hotel.id, company.id, pay),
            lambda: receivables.receive_payment(ctx, hotel.id, company.id, pay))
    assert not isinstance(outcome["first"], Exception), outcome
    with read_scope(ctx):
        owed = CompanyReceivableAccount.get(
            CompanyReceivableAccount.company_profile_id == company.id).open_balance
    received = _events(ctx, "hotel:pms:company_receivable_account:payment_received",
                       outcome["first"].account.id)
    if locking:
        assert getattr(outcome["second"], "code", None) == "receivable_overpaid", outcome
        assert (owed, received) == (40, 1)
    else:  # the control: both read 100.00 owed, both are booked, the last write wins
        assert not isinstance(outcome["second"], Exception), outcome
        assert received == 2


def test_parallel_bookings_billed_to_a_company_never_go_over_its_credit_limit(pms_server,
                                                                              pg_db, ctx):
    hotel = make_booking_hotel(ctx, rooms=10)  # a night is 100.00: a two-night stay 200.00
    company = _company(ctx, hotel)  # credit limit 1000.00: five stays
    pm = cpm.submit(ctx, hotel.id, company.id, CompanyPaymentMethodIn(
        payment_method_id=owned_method(company.id)), payments=PAYMENTS).id
    cpm.move(ctx, hotel.id, company.id, pm, "approve_bill_to_company")
    url = f"{pms_server.base_url}/v1/properties/{hotel.id}/reservations"
    headers = pms_server.headers(ctx.env_id)
    body = reservation_body(hotel, company_profile_id=str(company.id),
                            company_payment_method_id=str(pm))

    def send(i: int, session: Any) -> tuple[int, Any]:
        resp = session.post(url, json=body, headers=headers, timeout=60)
        return resp.status_code, resp.json().get("code")

    results = fire(9, send)
    assert Counter(status for status, _ in results) == Counter({201: 5, 409: 4}), (
        results, pms_server.log_tail())
    assert {code for status, code in results if status == 409} == {"credit_limit_exceeded"}
