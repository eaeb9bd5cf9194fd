"""Two night audits of the same property and date at once (two CLI runs, or the CLI and the API)
post every room charge exactly once: the run row is unique and each step runs under its lock."""

from __future__ import annotations

import threading

import msgspec
import pytest

from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import FolioCharge
from pms.models.end_of_day import NightAuditRun, NightAuditStep
from pms.schemas.cashiering import TransactionCodeIn
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from pms.services.night_audit.end_of_day import Hooks, run_night_audit
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import EOD_OVERRIDE

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_concurrent_audits_post_each_night_once(ctx, pg_db):
    hotel = make_booking_hotel(ctx, rooms=6)
    catalog.create_child(ctx, TRANSACTION_CODE, hotel.id, msgspec.convert(
        {"code": "ROOM", "name": "Lodging", "category": "room",
         "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7"}]}, TransactionCodeIn))
    stays = [make_checked_in(ctx, hotel) for _ in range(6)]
    results, errors = [], []

    def audit():
        try:
            results.append(run_night_audit(ctx, hotel.id, business_date=hotel.today,
                                           hooks=Hooks(), override_reason=EOD_OVERRIDE))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            if not db.is_closed():
                db.close()

    threads = [threading.Thread(target=audit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert {r.status for r in results} == {"DONE"} and len({r.id for r in results}) == 1
    with read_scope(ctx):
        assert NightAuditRun.select().count() == 1
        assert NightAuditStep.select().count() == 6  # block_cut_offs
        rows = (FolioCharge.select(FolioCharge.reservation, FolioCharge.night)
                .where(FolioCharge.kind == "room").tuples())
        assert sorted(r[0] for r in rows) == sorted(s.id for s in stays)
        assert FolioCharge.select().where(FolioCharge.kind == "tax").count() == len(stays)
