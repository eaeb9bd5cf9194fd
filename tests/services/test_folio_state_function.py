"""`pms_folio_state` (migration 016), the folio state read of pms.services.cashiering.folio_state on
PostgreSQL:

- `matches_the_tables`: its result columns: the folio whole as its table's row type (migration
  030: the caller names the model's columns), then the property and reservation columns it
  returns (names and types); the folio it reads is the one the table holds.
- `a_locked_read_waits_...`: a locked read takes the stay's reservation row, then waits for a
  concurrent holder of the folio row's lock, and once that holder commits reads the line it
  wrote (the function is VOLATILE: its read takes a snapshot after the locks are granted).
- `the_guest_folio_locks_function_...`: `pms_lock_guest_folios` (migration 019, check-out's
  locks) holds the guest folio's and the other OPEN folios' locks and returns the guest folio.
"""

from __future__ import annotations

import threading
import time
import uuid
from decimal import Decimal
from typing import Any

import msgspec
import psycopg2
import pytest

from pms.db.database import db, is_postgres
from pms.db.uow import read_scope, unit_of_work
from pms.models import Folio, FolioCharge
from pms.schemas.cashiering import ExtraFolioIn
from pms.services.cashiering import cashiering
from pms.services.cashiering.folio_state import read_state
from tests import pg
from tests.factories import make_fb_stay

pytestmark = [pytest.mark.postgres]

_STATE_COLUMNS = ["state_charges", "state_payments", "state_posted_nights", "state_room_code",
                  "state_packages", "state_code", "state_others"]
_PROPERTY = ["timezone", "business_date"]
_RESERVATION = ["status", "arrival_date", "departure_date", "nightly_prices", "rate_plan_id",
                "adults", "children", "confirmation_number", "currency"]


def _column_types(table: str) -> dict[str, int]:
    rows = db.execute_sql(
        "SELECT a.attname, a.atttypid FROM pg_attribute a WHERE a.attrelid = %s::regclass"
        " AND a.attnum > 0 AND NOT a.attisdropped", (table,)).fetchall()
    return dict(rows)


def test_the_folio_state_function_matches_the_tables(ctx, pg_db):
    hotel, res, folio = make_fb_stay(ctx)
    with read_scope(ctx):
        cursor = db.execute_sql(
            "SELECT * FROM pms_folio_state(%s, %s, NULL, NULL, false, 'FB', true)",
            (ctx.env_id.hex, folio.id.hex))
        described = [(c.name, c.type_code) for c in cursor.description]
        row = cursor.fetchone()
        tables = {"p": _column_types("property"), "r": _column_types("reservation")}
        folio_type = db.execute_sql(
            "SELECT reltype FROM pg_class WHERE oid = 'folio'::regclass").fetchone()[0]
        state = read_state(folio.id, now=ctx.now, code="FB")
    names = [name for name, _ in described]
    # the folio whole, as its table's row type (migration 030): a column added to `folio` needs
    # no change to the function (the caller names the model's columns)
    assert described[0] == ("f_row", folio_type)
    assert names[1:] == [*(f"p_{c}" for c in _PROPERTY), *(f"r_{c}" for c in _RESERVATION),
                         *_STATE_COLUMNS]
    wrong = [(name, type_code) for name, type_code in described if name[:2] in ("p_", "r_")
             and tables[name[0]][name[2:]] != type_code]
    assert wrong == [], f"columns whose type is not the table's: {wrong}"
    with read_scope(ctx):
        assert state.folio.__data__ == Folio.select().where(Folio.id == folio.id).get().__data__
    assert str(state.stay.id) == str(res.id) and str(state.folio.property_id) == str(hotel.id)
    assert row[names.index("state_code")] is not None  # the FB code, asked for
    assert row[names.index("state_others")] is None  # no other OPEN folio


def test_the_folio_state_function_leaves_out_what_is_not_asked(ctx, pg_db):
    hotel, res, folio = make_fb_stay(ctx)
    extra = cashiering.open_extra_folio(ctx, hotel.id, res.id, ExtraFolioIn())
    call = ("SELECT state_code, state_others FROM pms_folio_state(%s, %s, %s, NULL, false, %s, %s)")
    with read_scope(ctx):
        asked = db.execute_sql(call, (ctx.env_id.hex, folio.id.hex, hotel.id.hex, "FB", True))
        asked = asked.fetchone()
        plain = db.execute_sql(call, (ctx.env_id.hex, folio.id.hex, hotel.id.hex, None, False))
        plain = plain.fetchone()
        elsewhere = db.execute_sql(call, (ctx.env_id.hex, folio.id.hex, uuid.uuid4().hex, None,
                                          False)).fetchall()
    code, others = asked
    assert msgspec.json.decode(code)[0] == "FB"
    assert [o[0] for o in msgspec.json.decode(others)] == [str(extra.id)]
    assert plain == (None, None)
    assert elsewhere == []  # another property's filter finds no folio


def _service_connection():
    """A connection of the service role (the one the app uses), outside the app's pool: as the
    same role, it sees the reader's backend in pg_stat_activity whatever the admin role is."""
    database = db.obj
    return psycopg2.connect(database=database.database, **database.connect_params)


def _row_locked(env_id: uuid.UUID, table: str, row_id: Any) -> bool:
    """Whether some other transaction holds the row's lock (asked NOWAIT in the row's env, under
    row-level security as the service sees it; `table` is one of this module's names)."""
    conn = _service_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT set_config('app.env_id', %s, true)", (str(env_id),))
            try:
                cur.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE NOWAIT",
                            (str(row_id),))
            except psycopg2.errors.LockNotAvailable:
                return True
            assert cur.fetchone() == (1,), f"no such {table} row"
            return False
    finally:
        conn.rollback()
        conn.close()


def _waiting_on_a_lock(pid: int) -> bool:
    conn = _service_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,))
            found = cur.fetchone()
            return found is not None and found[0] == "Lock"
    finally:
        conn.rollback()
        conn.close()


def test_a_locked_read_waits_for_the_folios_lock_holder_and_sees_its_line(ctx, pg_db):
    if not is_postgres():
        pytest.skip("the function is PostgreSQL's")
    hotel, res, folio = make_fb_stay(ctx)
    with read_scope(ctx):
        before = [c.id for c in read_state(folio.id, now=ctx.now).charges]
    holding, release = threading.Event(), threading.Event()
    line_id = uuid.uuid4()
    out: dict = {}

    def holder():
        try:
            with unit_of_work(ctx):
                db.execute_sql("SELECT 1 FROM folio WHERE env_id = %s AND id = %s FOR UPDATE",
                               (ctx.env_id.hex, folio.id.hex))
                FolioCharge.create(
                    id=line_id, folio=folio.id, reservation=res.id, category="F&B",
                    description="Late dinner", amount=Decimal("12.50"), currency=folio.currency,
                    business_date=hotel.today, kind="charge")
                holding.set()
                release.wait(30)
        finally:
            holding.set()
            db.close()

    def reader():
        try:
            with unit_of_work(ctx):
                out["pid"] = pg.backend_pid(db)
                out["state"] = read_state(folio.id, now=ctx.now, property_id=hotel.id,
                                          lock=True)
                out["done"] = time.monotonic()
        finally:
            db.close()

    first = threading.Thread(target=holder)
    first.start()
    second = threading.Thread(target=reader)
    try:
        assert holding.wait(30)
        second.start()
        deadline = time.monotonic() + 20
        while not ("pid" in out and _waiting_on_a_lock(out["pid"])) \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "state" not in out and _waiting_on_a_lock(out["pid"])  # the reader waits
        # the reservation's lock first, held while waiting
        assert _row_locked(ctx.env_id, "reservation", res.id)
        committed = time.monotonic()
    finally:  # a failure above must not leave the holder's transaction open for 30 s
        release.set()
        first.join(30)
        if second.is_alive() or second.ident is not None:
            second.join(30)
    assert out["done"] >= committed
    charges = out["state"].charges
    assert [c.id for c in charges] == [*before, line_id]
    assert charges[-1].amount == Decimal("12.50") and charges[-1].description == "Late dinner"


def test_the_guest_folio_locks_function_locks_the_guest_and_the_other_open_folios(ctx, pg_db):
    """`pms_lock_guest_folios` (migration 019), check-out's locks: the stay's guest folio and
    its other OPEN folios are locked until the caller's transaction ends, and the guest
    folio's id is returned (NULL for a stay without folios)."""
    if not is_postgres():
        pytest.skip("the function is PostgreSQL's")
    hotel, res, folio = make_fb_stay(ctx)
    extra = cashiering.open_extra_folio(ctx, hotel.id, res.id, ExtraFolioIn())
    with unit_of_work(ctx):
        (guest,) = db.execute_sql("SELECT pms_lock_guest_folios(%s, %s)",
                                  (ctx.env_id.hex, res.id.hex)).fetchone()
        assert uuid.UUID(str(guest)) == folio.id
        assert _row_locked(ctx.env_id, "folio", folio.id)
        assert _row_locked(ctx.env_id, "folio", extra.id)
        (none,) = db.execute_sql("SELECT pms_lock_guest_folios(%s, %s)",
                                 (ctx.env_id.hex, uuid.uuid4().hex)).fetchone()
        assert none is None
    assert not _row_locked(ctx.env_id, "folio", folio.id)
    assert not _row_locked(ctx.env_id, "folio", extra.id)
