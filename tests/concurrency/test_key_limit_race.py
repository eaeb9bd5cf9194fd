"""max_keys_per_stay under real concurrency on PostgreSQL: eight key issues for one
stay at once never leave more than the limit of live keys.

Threads (each with its own pooled connection) call the issue service together; a TEST-ONLY hook
pauses each one right after it counted the stay's live keys, so every issuer overlaps the
others. The stay's reservation row is locked before the count, so the issues queue and each
counts what the previous ones wrote. The control run takes no row lock
(`wiring.installed(locking_enabled=False)`) and must exceed the limit, which shows the real test
is able to fail.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import KeyLimitReached
from pms.models import DigitalKey
from pms.schemas.keys import KeyIn
from pms.services.keys import keys
from tests.factories import make_booking_hotel, make_checked_in

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ISSUERS, LIMIT = 8, 2
LOCKED_PAUSE_S = 0.05   # each issuer holds the stay's lock through it; the others queue
CONTROL_PAUSE_S = 0.5   # no lock: every issuer counts before anyone commits


def _race(ctx, **switches: Any) -> tuple[list[str], list[BaseException], int]:
    hotel = make_booking_hotel(ctx, rooms=1)
    stay = make_checked_in(ctx, hotel)
    barrier = threading.Barrier(ISSUERS, timeout=120)

    def issue() -> str:
        barrier.wait()
        try:
            keys.issue_key(ctx, hotel.id, KeyIn(reservation_id=stay.id, key_type="MOBILE"))
            return "issued"
        except KeyLimitReached:
            return "key_limit_reached"
        finally:
            db.close()

    with wiring.installed(**switches), ThreadPoolExecutor(max_workers=ISSUERS) as pool:
        futures = [pool.submit(issue) for _ in range(ISSUERS)]
    results, errors = [], []
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions
            errors.append(exc)
    with read_scope(ctx):
        live = DigitalKey.select().where(DigitalKey.reservation == stay.id).count()
    return results, errors, live


def test_concurrent_issues_for_one_stay_never_exceed_max_keys_per_stay(ctx, pg_db):
    results, errors, live = _race(ctx, pause_after_key_count=lambda: time.sleep(LOCKED_PAUSE_S))
    assert errors == []
    assert results.count("issued") == LIMIT, results
    assert results.count("key_limit_reached") == ISSUERS - LIMIT
    assert live == LIMIT


def test_control_without_the_stay_lock_exceeds_the_limit(ctx, pg_db):
    results, errors, live = _race(ctx, locking_enabled=False,
                                  pause_after_key_count=lambda: time.sleep(CONTROL_PAUSE_S))
    assert errors == []
    assert live > LIMIT, results  # the race the lock prevents is real
