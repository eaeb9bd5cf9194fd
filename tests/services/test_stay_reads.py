"""The front desk's locked reads in one statement (pms.services.frontdesk.stay_reads, PostgreSQL):

- `check_out_read`: the stay, its room, its guest folio and its other OPEN folios are locked
  until the transaction ends, the reservation and the guest folio declared locked to the unit of
  work, and the answer is what the step-by-step reads (its SQLite path) give;
- `check_in_read`: a stay that may check in today gets the first free room picked and locked in
  the same statement; a stay refused by its own checks (arriving tomorrow) tries no pick and
  locks no room (the control: the same hotel's room is then free for anyone).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import psycopg2
import pytest

from pms.db.database import db, is_postgres
from pms.db.uow import unit_of_work
from pms.models import Folio, Reservation
from pms.schemas.cashiering import ExtraFolioIn
from pms.services.cashiering import cashiering, departure_documents
from pms.services.frontdesk import stay_reads
from tests.factories import make_booking_hotel, make_fb_stay, make_reservation

pytestmark = [pytest.mark.postgres]


def _row_locked(env_id: uuid.UUID, table: str, row_id: Any) -> bool:
    """Whether another transaction holds the row's lock (asked NOWAIT as the service role)."""
    database = db.obj
    conn = psycopg2.connect(database=database.database, **database.connect_params)
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


def test_the_check_out_read_locks_the_stay_its_room_and_its_folios_in_one_statement(ctx, pg_db):
    if not is_postgres():
        pytest.skip("the one statement is PostgreSQL's")
    hotel, res, folio = make_fb_stay(ctx)
    extra = cashiering.open_extra_folio(ctx, hotel.id, res.id, ExtraFolioIn())
    with unit_of_work(ctx) as uow:
        row, today, room, state = stay_reads.check_out_read(uow, ctx, hotel.id, res.id)
        # the departure rule's settings, read ahead in the same statement, answer as its read
        assert departure_documents.read_ahead_key(hotel.id) in uow.read_ahead
        assert departure_documents.required(hotel.id) is False
        assert departure_documents.required(hotel.id, uow) is False
        assert departure_documents.read_ahead_key(hotel.id) not in uow.read_ahead  # taken once
        # the stay's live keys counted (and locked) ahead: none, so the hook reads nothing
        from pms.services.keys import key_store

        assert uow.read_ahead[key_store.read_ahead_key(res.id)] == 0
        assert key_store.locked_live(res.id, uow=uow) == []
        assert row.id == res.id and row.status == "CHECKED_IN" and today == hotel.today
        assert room is not None and room.id == res.room_id
        assert state.folio.id == folio.id and [o.id for o in state.others] == [extra.id]
        for table, row_id in (("reservation", res.id), ("room", res.room_id),
                              ("folio", folio.id), ("folio", extra.id)):
            assert _row_locked(ctx.env_id, table, row_id), table
        assert (Reservation, res.id) in uow._locked and (Folio, folio.id) in uow._locked
        step_by_step = stay_reads.check_out_read.reference(uow, ctx, hotel.id, res.id)
    assert step_by_step[0].__data__ == row.__data__ and step_by_step[1] == today
    assert step_by_step[2].__data__ == room.__data__
    assert step_by_step[3].folio.__data__ == state.folio.__data__
    assert [c.id for c in step_by_step[3].charges] == [c.id for c in state.charges]
    assert not _row_locked(ctx.env_id, "reservation", res.id)
    assert not _row_locked(ctx.env_id, "room", res.room_id)


def test_the_check_in_read_picks_and_locks_a_room_only_for_a_stay_that_may_check_in(ctx, pg_db):
    if not is_postgres():
        pytest.skip("the one statement is PostgreSQL's")
    hotel = make_booking_hotel(ctx, rooms=1)
    (only,) = hotel.rooms
    today = make_reservation(ctx, hotel,
                             departure_date=(hotel.today + timedelta(days=1)).isoformat())
    tomorrow = make_reservation(
        ctx, hotel, arrival_date=(hotel.today + timedelta(days=1)).isoformat(),
        departure_date=(hotel.today + timedelta(days=3)).isoformat())
    with unit_of_work(ctx):  # the control: arriving tomorrow, refused later, tries nothing
        row, _, room, tried = stay_reads.check_in_read(ctx, hotel.id, tomorrow.id)
        assert row.id == tomorrow.id and room is None and tried is False
        assert _row_locked(ctx.env_id, "reservation", tomorrow.id)
        assert not _row_locked(ctx.env_id, "room", only.id)
    with unit_of_work(ctx):
        row, day, room, tried = stay_reads.check_in_read(ctx, hotel.id, today.id)
        assert row.id == today.id and day == hotel.today and tried is True
        assert room is not None and room.id == only.id
        assert _row_locked(ctx.env_id, "room", only.id)
    with pytest.raises(Exception, match="no such reservation"):
        with unit_of_work(ctx):
            stay_reads.check_in_read(ctx, hotel.id, uuid.uuid4())


def _key_committed_while_check_out_waits(ctx: Any) -> tuple[Any, Any]:
    """A stay whose only key is revoked; another transaction holds the stay's lock and makes
    the key live again, and commits once check-out waits for that lock. Returns (the key's
    row after check-out, check-out's answer)."""
    import threading
    import time

    from pms.errors import FolioNotClosable
    from pms.models import DigitalKey
    from pms.schemas.keys import KeyIn
    from pms.services.frontdesk import checkout
    from pms.services.keys import keys
    from tests import pg
    from tests.factories import make_checked_in, pay_folio

    hotel = make_booking_hotel(ctx, rooms=2)
    res = make_checked_in(ctx, hotel)
    key = keys.issue_key(ctx, hotel.id, KeyIn(reservation_id=res.id, key_type="MOBILE"))
    try:  # what the stay owes at check-out (refused, nothing written), paid
        checkout.check_out(ctx, hotel.id, res.id)
    except FolioNotClosable as exc:
        pay_folio(ctx, res, exc.extra["balance"])
    database = db.obj
    holder = psycopg2.connect(database=database.database, **database.connect_params)
    admin = psycopg2.connect(pg.admin_url())
    admin.autocommit = True
    answer: list[Any] = []
    try:
        with holder.cursor() as cur:
            cur.execute("SELECT set_config('app.env_id', %s, false)", (str(ctx.env_id),))
            cur.execute("UPDATE digital_key SET status = 'REVOKED' WHERE id = %s", (str(key.id),))
            holder.commit()
            cur.execute("SELECT 1 FROM reservation WHERE id = %s FOR UPDATE", (str(res.id),))
            cur.execute("UPDATE digital_key SET status = 'ACTIVE' WHERE id = %s", (str(key.id),))

        def check_out() -> None:
            try:
                answer.append(checkout.check_out(ctx, hotel.id, res.id).status)
            except Exception as exc:  # noqa: BLE001 - the test reads it
                answer.append(exc)
            finally:
                db.close()

        thread = threading.Thread(target=check_out)
        thread.start()
        deadline = time.monotonic() + 60
        waiting = 0
        while not waiting and time.monotonic() < deadline:
            with admin.cursor() as cur:
                cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                            " AND wait_event_type = 'Lock'", (database.database,))
                waiting = cur.fetchone()[0]
            time.sleep(0.02)
        assert waiting, "check-out never waited for the stay's lock"
        holder.commit()
        thread.join(60)
    finally:
        holder.close()
        admin.close()
    from pms.db.uow import read_scope

    with read_scope(ctx):
        return DigitalKey.get_by_id(key.id), answer[0]


def test_a_key_made_live_while_check_out_waits_for_the_stay_is_revoked(ctx, pg_db, monkeypatch):
    monkeypatch.setattr(db.obj, "lock_timeout_ms", 60_000)  # the wait is the test's own
    row, answer = _key_committed_while_check_out_waits(ctx)
    assert answer == "CHECKED_OUT"
    assert (row.status, row.revoke_reason) == ("REVOKED", "check_out")


def test_the_control_a_count_on_the_statements_snapshot_misses_that_key(ctx, pg_db, monkeypatch):
    """The count as a plain subquery reads the snapshot the statement took before its wait:
    the key made live meanwhile is not seen, and the guest leaves with a live key."""
    from pms.services.keys import key_store

    monkeypatch.setattr(db.obj, "lock_timeout_ms", 60_000)
    monkeypatch.setattr(key_store, "live_keys_locked", lambda stay: (
        "(SELECT count(*) FROM digital_key WHERE env_id = %(env)s AND reservation_id = "
        f"{stay} AND status IN ('INACTIVE', 'ACTIVE'))"))
    stay_reads._check_out_statement.cache_clear()
    try:
        row, answer = _key_committed_while_check_out_waits(ctx)
    finally:
        stay_reads._check_out_statement.cache_clear()
    assert answer == "CHECKED_OUT"
    assert row.status == "ACTIVE"
