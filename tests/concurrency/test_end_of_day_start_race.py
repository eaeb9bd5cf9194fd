"""Two starts of the night audit of one property and date at once: the second start
is told the run is already under way (409 end_of_day_in_progress) instead of failing on the
run's unique key with an IntegrityError (500)."""

from __future__ import annotations

import threading
import time

import psycopg2
import pytest

from pms.db.database import db
from pms.db.uow import read_scope, unit_of_work
from pms.models.end_of_day import NightAuditRun
from pms.services.night_audit.end_of_day import NightAuditUnderWay, claim_in
from tests import pg
from tests.factories import make_booking_hotel

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _lock_waiters(dbname: str) -> int:
    conn = psycopg2.connect(pg.admin_url())
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                        "AND wait_event_type = 'Lock'", (dbname,))
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def test_second_concurrent_end_of_day_start_is_told_the_run_is_under_way(ctx, pg_db,
                                                                        pg_database):
    hotel = make_booking_hotel(ctx, rooms=1)
    first_in, outcome = threading.Event(), {}

    def first() -> None:
        try:
            with unit_of_work(ctx) as uow:
                claim_in(uow, ctx, hotel.id, hotel.today)
                first_in.set()
                # hold the new row uncommitted until the second start waits on its key
                deadline = time.monotonic() + 20
                while _lock_waiters(pg_database.name) == 0 and time.monotonic() < deadline:
                    time.sleep(0.05)
        finally:
            db.close()

    def second() -> None:
        first_in.wait(20)
        try:
            with unit_of_work(ctx) as uow:
                claim_in(uow, ctx, hotel.id, hotel.today)
            outcome["result"] = "claimed"
        except NightAuditUnderWay as exc:
            outcome["result"] = exc
        except Exception as exc:  # noqa: BLE001 - the defect: IntegrityError
            outcome["result"] = exc
        finally:
            db.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    refused = outcome["result"]
    assert isinstance(refused, NightAuditUnderWay), refused
    assert refused.status == 409 and refused.code == "end_of_day_in_progress"
    with read_scope(ctx):
        (run,) = NightAuditRun.select()
    assert refused.extra["run_id"] == str(run.id)
