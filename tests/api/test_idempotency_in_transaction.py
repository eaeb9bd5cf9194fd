"""`Idempotency-Key` on a one-transaction route (the booking) on PostgreSQL: the key is claimed
in the booking's own transaction and its record commits WITH the change (issue 10), with every
rule of the general path kept (CONTRACT §3): replay, mismatch 422, in use 409 at once, 409 not
stored, 422 stored; and the whole booking in few round trips.

Rules pinned, by test name:
- `idempotency_record_commits_with_the_change`: one transaction writes the reservation, its
  outbox and audit rows and the done record; a replay answers from it and changes nothing.
- `idempotency_key_held_by_a_live_request_is_409_at_once`: a concurrent holder of the key (its
  transaction-level lock) gets 409 idempotency_key_in_use without waiting.
- `booking_with_idempotency_key_round_trips`: round trips of the whole POST, pinned; the audit,
  outbox and record INSERTs travel with the COMMIT.
"""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg2
import pytest

from bench.statements import Tally, counting_connection_factory
from pms.db.database import db, is_postgres
from pms.db.uow import read_scope
from pms.models import IdempotencyRecord, Reservation
from pms.models.inventory import InventoryDay
from pms.services import inventory
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import assert_problem, counts

# The POST with a key: claim, references with rates and restrictions, the reservation with
# the nights, then audit + outbox + the record + COMMIT in one. It was 18 (22 on a night never booked),
# in 3 transactions.
BOOKING_WITH_KEY_ROUND_TRIPS = 4


@pytest.fixture
def hotel(ctx, database):
    if not is_postgres():
        pytest.skip("the in-transaction claim is PostgreSQL's (SQLite keeps the general path)")
    made = make_booking_hotel(ctx, rooms=1, amount="120.00")
    inventory.ensure_inventory(ctx, made.prop.id, made.room_type.id, made.today,
                               made.today + timedelta(days=30))
    return made


def _post(api, hotel, key, **over):
    return api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel, **over),
                    headers={"Idempotency-Key": key})


def _record(ctx, key):
    with read_scope(ctx):
        return IdempotencyRecord.get_or_none(IdempotencyRecord.key == key)


def test_idempotency_record_commits_with_the_change(api, ctx, hotel):
    first = _post(api, hotel, "book-1")
    assert first.status_code == 201, first.text
    record = _record(ctx, "book-1")
    assert record.state == "done" and record.response_status == 201
    with read_scope(ctx):
        assert Reservation.select().count() == 1
    before = counts(ctx)
    again = _post(api, hotel, "book-1")
    assert again.status_code == 201 and again.json == first.json
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers.get("location") == first.headers.get("location")
    assert counts(ctx) == before
    assert_problem(_post(api, hotel, "book-1", adults=1), 422, "idempotency_key_mismatch")


def test_idempotency_sold_out_is_not_stored_and_validation_is(api, ctx, hotel):
    assert _post(api, hotel, "fill").status_code == 201
    sold_out = _post(api, hotel, "late")
    assert_problem(sold_out, 409, "room_type_unavailable")
    assert _record(ctx, "late") is None  # the key is free: a retry runs again
    assert_problem(_post(api, hotel, "late"), 409, "room_type_unavailable")
    bad = _post(api, hotel, "bad", adults=9)
    assert bad.status_code == 422
    again = _post(api, hotel, "bad", adults=9)
    assert again.status_code == 422 and again.headers["idempotent-replayed"] == "true"
    with read_scope(ctx):
        assert Reservation.select().count() == 1


def test_idempotency_key_held_by_a_live_request_is_409_at_once(api, ctx, hotel):
    database = db.obj
    other = psycopg2.connect(database=database.database, **database.connect_params)
    try:
        with other.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s || ':' || %s, 0))",
                        (ctx.env_id.hex, "held"))
            assert cur.fetchone()[0] is True
        started = time.monotonic()
        resp = _post(api, hotel, "held")
        assert_problem(resp, 409, "idempotency_key_in_use")
        assert time.monotonic() - started < 3.5  # not the 4 s lock timeout then 503
        with read_scope(ctx):
            assert Reservation.select().count() == 0
    finally:
        other.rollback()
        other.close()
    assert _post(api, hotel, "held").status_code == 201


def test_booking_with_idempotency_key_round_trips(api, ctx, hotel):
    _post(api, hotel, "warm", departure_date=str(hotel.today + _days(1)))  # compile once
    database = db.obj
    tally = Tally(log=[])
    database.close_all()
    database.connect_params["connection_factory"] = counting_connection_factory(tally)
    try:
        resp = _post(api, hotel, "counted", arrival_date=str(hotel.today + _days(1)),
                     departure_date=str(hotel.today + _days(2)))
    finally:
        database.close_all()
        database.connect_params.pop("connection_factory", None)
    assert resp.status_code == 201, resp.text
    assert tally.transactions == 1
    assert tally.round_trips == BOOKING_WITH_KEY_ROUND_TRIPS, "\n---\n".join(tally.log or [])
    last = tally.log[-1]  # the writes that need no answer go out with the COMMIT
    assert all(table in last for table in ("audit_entry", "outbox_event", "idempotency_record"))
    assert last.rstrip().endswith("COMMIT")


def _days(n):
    return timedelta(days=n)


def test_idempotency_fold_by_confirmation_number_in_transaction(api, ctx, hotel):
    first = _post(api, hotel, "fold-1", confirmation_number="FOLDME2030")
    assert first.status_code == 201, first.text
    twin = _post(api, hotel, "fold-2", confirmation_number="FOLDME2030")
    assert twin.status_code == 200 and twin.json["id"] == first.json["id"]
    assert _record(ctx, "fold-2").response_status == 200
    replay = _post(api, hotel, "fold-2", confirmation_number="FOLDME2030")
    assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
    with read_scope(ctx):
        assert Reservation.select().count() == 1
        assert {d.sold for d in InventoryDay.select().where(
            (InventoryDay.room_type == hotel.room_type.id) & (InventoryDay.sold > 0))} == {1}
