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
from pms.services.cashiering import cashiering
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
        row, today, room, state = stay_reads.check_out_read(ctx, hotel.id, res.id)
        assert row.id == res.id and row.status == "CHECKED_IN" and today == hotel.today
        assert room is not None and room.id == res.room_id
        assert state.folio.id == folio.id and [o.id for o in state.others] == [extra.id]
        for table, row_id in (("reservation", res.id), ("room", res.room_id),
                              ("folio", folio.id), ("folio", extra.id)):
            assert _row_locked(ctx.env_id, table, row_id), table
        assert (Reservation, res.id) in uow._locked and (Folio, folio.id) in uow._locked
        step_by_step = stay_reads.check_out_read.reference(ctx, hotel.id, res.id)
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
