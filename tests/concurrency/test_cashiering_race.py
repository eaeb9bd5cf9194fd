"""Concurrent postings and a check-out on the same folio never leave a CLOSED folio with a
balance (the folio row is locked by both), with the control run: locking switched off, a
posting that saw the folio OPEN commits after the check-out closed it."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import PmsError
from pms.models import Folio
from pms.schemas.cashiering import ChargeIn, PaymentIn
from pms.services.cashiering import cashiering, payments
from pms.services.cashiering.folios import folio_balance
from pms.services.frontdesk import checkout
from tests.factories import make_fb_stay

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _stay(ctx):
    hotel, res, folio = make_fb_stay(ctx)
    # settle the room night check-out will post, so the folio is closable right now
    try:
        checkout.check_out(ctx, hotel.id, res.id)
    except PmsError as exc:
        payments.post_payment(ctx, hotel.id, folio.id, PaymentIn(
            amount=Decimal(exc.extra["balance"]), method="CASH"), payments=None)
    return hotel, res, folio


def _in_thread(fn, results, key):
    try:
        results[key] = fn()
    except PmsError as exc:
        results[key] = exc.code
    finally:
        if not db.is_closed():
            db.close()


def _race(ctx, hotel, res, folio, *, posters: int, pause: float):
    results: dict = {}
    with wiring.installed(pause_after_open_check=lambda: time.sleep(pause)):
        threads = [threading.Thread(target=_in_thread, args=(
            lambda: cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
                transaction_code="FB", amount=Decimal("1.00"))), results, f"post{i}"))
            for i in range(posters)]
        for t in threads:
            t.start()
        time.sleep(pause / 4)
        out = threading.Thread(target=_in_thread, args=(
            lambda: checkout.check_out(ctx, hotel.id, res.id), results, "checkout"))
        out.start()
        for t in [*threads, out]:
            t.join(30)
    with read_scope(ctx):
        row = Folio.get_by_id(folio.id)
        return row.status, folio_balance(row), results


def test_postings_racing_a_check_out_never_leave_a_closed_folio_with_a_balance(ctx, pg_db):
    for _ in range(5):
        hotel, res, folio = _stay(ctx)
        status, balance, results = _race(ctx, hotel, res, folio, posters=8, pause=0.05)
        assert "lock_timeout" not in results.values(), results  # serialized, no deadlock
        if status == "CLOSED":
            assert balance == 0, results
        else:
            assert results["checkout"] == "folio_not_closable", results


def test_control_without_locks_a_closed_folio_keeps_a_balance(ctx, pg_db):
    hotel, res, folio = _stay(ctx)
    with wiring.installed(locking_enabled=False):
        status, balance, results = _race(ctx, hotel, res, folio, posters=1, pause=0.5)
    assert status == "CLOSED" and balance == Decimal("1.00"), (status, balance, results)
