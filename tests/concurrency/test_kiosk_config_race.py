"""The first kiosk configurations of a property, sent at once on PostgreSQL: every
PUT answers, one row per property (unique in the database), one event per PUT; with If-Match
"0" ("only if none exists yet") exactly one of them wins and the others answer 412."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import PreconditionFailed
from pms.models import KioskConfig
from pms.schemas.kiosk import KioskConfigIn
from pms.services.kiosk import kiosk
from tests.factories import make_property

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WRITERS = 6


def _race(ctx, if_match):
    prop = make_property(ctx)
    barrier = threading.Barrier(WRITERS, timeout=120)

    def put(n: int) -> str:
        barrier.wait()
        try:
            kiosk.put_config(ctx, prop.id, KioskConfigIn(
                enabled_modes=["CHECK_IN"], add_on_package_codes=[], lockdown=False,
                max_keys_per_stay=1 + n % 3), if_match=if_match)
            return "ok"
        except PreconditionFailed:
            return "412"
        finally:
            db.close()

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        results = [f.result() for f in [pool.submit(put, n) for n in range(WRITERS)]]
    with read_scope(ctx):
        rows = list(KioskConfig.select().where(KioskConfig.property == prop.id))
    return results, rows


def test_first_puts_at_once_land_on_one_row(ctx, pg_db):
    results, rows = _race(ctx, None)
    assert results == ["ok"] * WRITERS
    assert len(rows) == 1 and rows[0].version == WRITERS


def test_first_puts_with_if_match_zero_let_exactly_one_win(ctx, pg_db):
    results, rows = _race(ctx, '"0"')
    assert results.count("ok") == 1 and results.count("412") == WRITERS - 1, results
    assert len(rows) == 1 and rows[0].version == 1
