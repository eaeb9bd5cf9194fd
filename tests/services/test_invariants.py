"""SQL invariants of SPEC rules 4, 5 and 6, checked over everything the database holds (run it
last, after the suite, to check the whole run; it also runs a small front-desk day first so it
is never vacuous):
- no night is sold above what can be sold (rule 6);
- every CHECKED_IN reservation's room has exactly one OPEN folio (rule 5);
- every committed reservation has its outbox row (rule 4).
"""

from __future__ import annotations

import pytest

from pms.db.database import db
from pms.db.scope import unscoped
from pms.db.uow import read_scope
from tests.factories import make_booking_hotel, make_checked_in, make_reservation, pay_folio

OVERSOLD = """
SELECT d.id FROM inventory_day d
 WHERE {env_filter} d.sold > d.physical - d.ooo - d.oos
"""

IN_HOUSE_WITHOUT_ONE_OPEN_FOLIO = """
SELECT r.id FROM reservation r
 WHERE {env_filter} r.status = 'CHECKED_IN'
   AND (r.room_id IS NULL
        OR (SELECT count(*) FROM folio f
             WHERE f.reservation_id = r.id AND f.status = 'OPEN' AND f.folio_type = 'GUEST'
               AND f.room_number = (SELECT room_number FROM room WHERE room.id = r.room_id)) <> 1)
"""

WITHOUT_OUTBOX_ROW = """
SELECT r.id FROM reservation r
 WHERE {env_filter} NOT EXISTS (
       SELECT 1 FROM outbox_event o
        WHERE REPLACE(o.subject, '-', '') = REPLACE(CAST(r.id AS VARCHAR(64)), '-', ''))
"""


def _violations(ctx, sql, *, whole_database=False):
    """Rows breaking the invariant: in this test's env, or (SQLite) in every env of the run."""
    param = db.obj.param
    alias = sql.split("FROM ", 1)[1].split()[1]
    if whole_database:
        with unscoped(), read_scope(ctx):
            return db.execute_sql(sql.format(env_filter=""), ()).fetchall()
    value = str(ctx.env_id) if db.obj.__class__.__name__.startswith("PmsPostgres") \
        else ctx.env_id.hex
    with read_scope(ctx):
        return db.execute_sql(sql.format(env_filter=f"{alias}.env_id = {param} AND "),
                              (value,)).fetchall()


@pytest.fixture
def busy_day(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=3)
    make_reservation(ctx, hotel)
    make_checked_in(ctx, hotel)
    done = make_checked_in(ctx, hotel)
    pay_folio(ctx, done, "100.00")
    from pms.services.frontdesk import checkout

    checkout.check_out(ctx, hotel.id, done.id)
    return hotel


@pytest.mark.parametrize("name, sql", [
    ("no night sold above sellable", OVERSOLD),
    ("every in-house room has exactly one OPEN folio", IN_HOUSE_WITHOUT_ONE_OPEN_FOLIO),
    ("every committed reservation has its outbox row", WITHOUT_OUTBOX_ROW),
])
def test_invariant_holds(ctx, busy_day, name, sql):
    assert _violations(ctx, sql) == [], name


@pytest.mark.parametrize("name, sql", [
    ("no night sold above sellable", OVERSOLD),
    ("every committed reservation has its outbox row", WITHOUT_OUTBOX_ROW),
])
def test_invariant_holds_across_every_env_of_the_run(ctx, sqlite_db, name, sql):
    """Over the shared SQLite database of the whole run (every test's env)."""
    assert _violations(ctx, sql, whole_database=True) == [], name
