"""The booking write path at database speed: the rules of its shape, each pinned.

- `inventory_nights_sold_in_one_statement`: on PostgreSQL the nights are locked, recounted and
  sold by ONE statement (no separate lock / room count / maintenance count / update).
- `new_aggregate_born_at_version_1`: a reservation is inserted at version 1 and its "created"
  event says aggregate_version 1, with no `version = version + 1` UPDATE in the transaction.
- `booking_references_in_one_read`: the property, room type and rate plan come in one SELECT.
- `first_booking_of_a_night_creates_its_calendar_rows`: a night without a calendar row (beyond
  the horizon a room type is created with) gets its rows made and taken by the booking.

The round trips of these bookings are budgets, pinned in tests/budgets (bench.budgets).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import msgspec
import pytest

from pms import wiring
from pms.db.database import db, is_postgres
from pms.db.uow import read_scope
from pms.errors import RoomTypeUnavailable
from pms.models import Reservation
from pms.models.inventory import InventoryDay
from pms.models.platform import OutboxEvent
from pms.schemas.reservations import ReservationIn
from pms.services.inventory import inventory
from pms.services.reservations import reservations
from tests.factories import make_booking_hotel, make_reservation, reservation_body
from tests.helpers import wire_tally


@pytest.fixture
def hotel(ctx, database):
    made = make_booking_hotel(ctx, rooms=2, amount="100.00")
    inventory.ensure_inventory(ctx, made.prop.id, made.room_type.id, made.today,
                               made.today + timedelta(days=30))
    return made


_book = make_reservation  # a booking through the use case, no HTTP


@contextmanager
def _statements() -> Iterator[list[str]]:
    """Every SQL text the app sends through the database object (both backends)."""
    database = db.obj
    seen: list[str] = []
    original = database.execute_sql

    def spy(sql, params=None):
        seen.append(sql)
        return original(sql, params)

    database.execute_sql = spy
    try:
        yield seen
    finally:
        del database.execute_sql


def _without_ari(sql: str) -> str:
    """The round trip's text without the ARI event's statement (sent with the COMMIT,
    it reads the nights back for the event, `pms.services.distribution.ari_events._in_commit`; the
    booking's own reads and writes are what these tests count)."""
    return "; ".join(part for part in sql.split("; ") if "ari_stream" not in part)


def test_new_aggregate_born_at_version_1(ctx, hotel):
    with _statements() as seen:
        row = _book(ctx, hotel)
    assert not [s for s in seen if re.search(r'UPDATE\s+"?reservation"?', s, re.I)]
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).version == 1
        event = OutboxEvent.get(OutboxEvent.subject == str(row.id))
    assert event.aggregate_version == 1 and event.type == "hotel:pms:reservation:created"
    # a later change of the same row still bumps
    reservations.cancel_reservation(ctx, hotel.prop.id, row.id) if hasattr(
        reservations, "cancel_reservation") else None
    with read_scope(ctx):
        versions = sorted(e.aggregate_version for e in
                          OutboxEvent.select().where(OutboxEvent.subject == str(row.id)))
    assert versions == list(range(1, len(versions) + 1))


def test_booking_references_in_one_read(ctx, hotel):
    with _statements() as seen:
        _book(ctx, hotel)
    # (on PostgreSQL the read is the call of pms_booking_refs, migration 013). The references
    # are what the booking reads before it writes: the ARI event's own reads at the commit
    # (its room type's code on SQLite's reference path) come after the reservation's INSERT.
    first_write = next(i for i, s in enumerate(seen) if re.search(
        r'INSERT\s+INTO\s+"?reservation"?\b|pms_take_nights', s, re.I))
    reads = [s for s in map(_without_ari, seen[:first_write])
             if re.search(r'FROM\s+"?(property|room_type|rate_plan)"?\b|pms_booking_refs', s)]
    assert len(reads) == 1, reads


def test_inventory_nights_sold_in_one_statement(ctx, hotel):
    if not is_postgres():
        pytest.skip("SQLite's write transaction holds the database lock: the slow path is fine")
    with _statements() as seen:
        _book(ctx, hotel)
    # the nights' statement: the call of pms_take_nights (migration 012), whose body is the
    # one statement that locks, recounts and takes them
    seen = [_without_ari(s) for s in seen]
    touching = [s for s in seen if re.search(r"\binventory_day\b|\bpms_take_nights\b", s)]
    assert len(touching) == 1, touching
    assert not [s for s in seen if re.search(r'FROM\s+"?room"?\s', s) and "inventory_day" not in s]
    with read_scope(ctx):
        sold = [d.sold for d in InventoryDay.select().where(
            (InventoryDay.room_type == hotel.room_type.id)
            & (InventoryDay.date >= hotel.today)).order_by(InventoryDay.date).limit(3)]
    assert sold == [1, 1, 0]


def test_first_booking_of_a_night_creates_its_calendar_rows(ctx, database):
    with wiring.installed(calendar_horizon_days=2):  # rows for today and tomorrow only
        cold = make_booking_hotel(ctx, rooms=2, amount="100.00")
    _book(ctx, cold, arrival_date=str(cold.today + timedelta(days=5)),
          departure_date=str(cold.today + timedelta(days=7)))
    with read_scope(ctx):
        rows = list(InventoryDay.select().where(
            (InventoryDay.room_type == cold.room_type.id)
            & (InventoryDay.date >= cold.today + timedelta(days=5))).order_by(InventoryDay.date))
    assert [(r.date - cold.today).days for r in rows] == [5, 6]
    assert all(r.sold == 1 and r.physical == 2 and r.ooo == r.oos == 0 for r in rows)


def test_a_first_booking_inside_the_horizon_sends_no_calendar_insert(ctx, database):
    """The room type was born with its calendar rows (no ensure_inventory here): a night never
    booked is taken by the one statement: no calendar INSERT is sent."""
    fresh = make_booking_hotel(ctx, rooms=2, amount="100.00")
    stay = {"arrival_date": str(fresh.today + timedelta(days=5)),
            "departure_date": str(fresh.today + timedelta(days=7))}
    if is_postgres():
        _book(ctx, fresh, departure_date=str(fresh.today + timedelta(days=1)))  # compile once
        with wire_tally() as tally:
            _book(ctx, fresh, **stay)
        sent = tally.log or []
    else:
        with _statements() as sent:
            _book(ctx, fresh, **stay)
    assert not [s for s in sent if re.search(r'INSERT INTO\s+"?inventory_day"?', s, re.I)]
    with read_scope(ctx):
        sold = [d.sold for d in InventoryDay.select().where(
            (InventoryDay.room_type == fresh.room_type.id)
            & (InventoryDay.date >= fresh.today + timedelta(days=4))).order_by(
            InventoryDay.date).limit(4)]
    assert sold == [0, 1, 1, 0]


def test_a_night_beyond_the_horizon_still_books(ctx, database):
    """The fallback stays correct on both databases: the booking makes the missing rows."""
    with wiring.installed(calendar_horizon_days=2):
        short = make_booking_hotel(ctx, rooms=1, amount="100.00")
    _book(ctx, short, arrival_date=str(short.today + timedelta(days=1)),
          departure_date=str(short.today + timedelta(days=4)))
    with read_scope(ctx):
        days = {(d.date - short.today).days: d.sold for d in InventoryDay.select().where(
            InventoryDay.room_type == short.room_type.id)}
    assert days == {0: 0, 1: 1, 2: 1, 3: 1}
    with pytest.raises(RoomTypeUnavailable):  # and the made rows are sold like the others
        _book(ctx, short, arrival_date=str(short.today + timedelta(days=3)),
              departure_date=str(short.today + timedelta(days=5)))


def test_booking_prices_and_restrictions_read_with_the_references(api, ctx, hotel):
    """The booking's own read of rates and restrictions (PostgreSQL) decides as the quote did:
    a closed night, a minimum stay or a missing rate refuses the stay (422 stay_not_bookable);
    a restriction of another plan or room type does not; the price is the loaded rates'."""
    base = f"/v1/properties/{hotel.id}"
    day = hotel.today + timedelta(days=10)
    other_plan = api.post(f"{base}/rate-plans", {"code": "OTHER", "name": "Other",
                                                 "currency": "EUR"})
    assert other_plan.status_code == 201, other_plan.text
    assert api.put(f"{base}/rate-plans/{other_plan.json['id']}/restrictions",
                   {"from_date": str(day), "to_date": str(day), "closed": True}).status_code == 200

    def book(arrival, nights):
        return api.post(f"{base}/reservations", reservation_body(
            hotel, arrival_date=str(arrival), departure_date=str(arrival + timedelta(days=nights))))

    ok = book(day, 2)  # closed for the other plan only
    assert ok.status_code == 201, ok.text
    assert ok.json["total_amount"] == "200.00"
    plan = f"{base}/rate-plans/{hotel.rate_plan.id}/restrictions"
    closed = day + timedelta(days=3)
    assert api.put(plan, {"from_date": str(closed), "to_date": str(closed),
                          "closed": True}).status_code == 200
    refused = book(closed, 1)
    assert refused.status_code == 422 and refused.json["code"] == "stay_not_bookable"
    longer = day + timedelta(days=5)
    assert api.put(plan, {"from_date": str(longer), "to_date": str(longer),
                          "min_los": 3}).status_code == 200
    assert book(longer, 2).json["code"] == "stay_not_bookable"
    assert book(longer, 3).status_code == 201
    unpriced = hotel.today + timedelta(days=400)  # beyond the loaded rates
    assert book(unpriced, 1).json["code"] == "stay_not_bookable"


def test_catalog_child_born_at_version_1(ctx, database):
    from tests.factories import make_property, make_room_type

    prop = make_property(ctx)
    with _statements() as seen:
        rt = make_room_type(ctx, prop.id)
    assert not [s for s in seen if re.search(r'UPDATE\s+"?room_type"?', s, re.I)]
    with read_scope(ctx):
        event = OutboxEvent.get(OutboxEvent.subject == str(rt.id))
    assert event.aggregate_version == 1 and rt.version == 1


def test_the_booking_functions_match_the_models(ctx, hotel):
    """pms_booking_refs (migrations 013, 030) returns the property, room type and rate plan rows
    whole (their tables' row types), then the rates and restrictions: the caller names the
    columns as the models list them, so a column added to one of those tables needs no change
    to the function (tests/db/test_row_typed_functions.py adds one)."""
    if not is_postgres():
        pytest.skip("the functions are PostgreSQL's")
    from pms.services.reservations.reservations import _read_refs

    with read_scope(ctx):
        cursor = db.execute_sql(
            "SELECT * FROM pms_booking_refs(%s, %s, %s, %s, current_date, current_date + 1)",
            (ctx.env_id.hex, hotel.prop.id.hex, hotel.room_type.id.hex, hotel.rate_plan.id.hex))
        described = [(c.name, c.type_code) for c in cursor.description]
        row_types = dict(db.execute_sql(
            "SELECT relname, reltype FROM pg_class WHERE relname IN "
            "('property', 'room_type', 'rate_plan') AND relnamespace = "
            "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())").fetchall())
        prop, room_type, plan, _ = _read_refs(hotel.prop.id, hotel.room_type.id,
                                              hotel.rate_plan.id,
                                              stay=(hotel.today, hotel.today + timedelta(days=1)))
    assert described[:3] == [("p_row", row_types["property"]),
                             ("rt_row", row_types["room_type"]),
                             ("rp_row", row_types["rate_plan"])]
    assert [name for name, _ in described[3:]] == ["stay_rates", "stay_restrictions"]
    assert (prop.id, room_type.id, plan.id) == (hotel.prop.id, hotel.room_type.id,
                                                hotel.rate_plan.id)
    with read_scope(ctx):
        assert prop.__data__ == type(prop).select().where(
            type(prop).id == prop.id).get().__data__
        assert plan.__data__ == type(plan).select().where(
            type(plan).id == plan.id).get().__data__


def test_every_plan_keeping_function_forces_its_generic_plan(ctx, hotel):
    """Each `pms_*` function runs its statements on the plan made once per server connection
    (migration 015): left to the plan cache's own choice, `pms_take_nights` was planned again
    for every booking. A new function without the setting fails here."""
    if not is_postgres():
        pytest.skip("the functions are PostgreSQL's")
    with read_scope(ctx):
        rows = db.execute_sql(
            "SELECT p.proname, coalesce(p.proconfig, '{}') FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE 'pms\\_%%'").fetchall()
    names = {name for name, _ in rows}
    assert {"pms_claim_idempotency_key", "pms_take_nights", "pms_booking_refs",
            "pms_profile_refs"} <= names
    lacking = sorted(name for name, config in rows
                     if "plan_cache_mode=force_generic_plan" not in config)
    assert lacking == [], f"functions without plan_cache_mode=force_generic_plan: {lacking}"


@pytest.mark.parametrize("model_name", ["AuditEntry", "OutboxEvent", "IdempotencyRecord"])
def test_the_journal_write_functions_take_the_row_whole(ctx, hotel, model_name):
    """The audit, outbox and Idempotency-Key rows are inserted through PL/pgSQL functions
    (migrations 017, 030) that take the row as one jsonb document of the model's columns
    (`jsonb_populate_record`): a column added to the table and the model needs no change to the
    function; the rows read back whole (the test below)."""
    if not is_postgres():
        pytest.skip("the functions are PostgreSQL's")
    from pms.models import platform

    model = getattr(platform, model_name)
    function = model._insert_function
    with read_scope(ctx):
        row = db.execute_sql(
            "SELECT p.proargnames, p.proargtypes::regtype[]::text[], p.proconfig FROM pg_proc p"
            " JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() AND p.proname = %s", (function,)).fetchall()
    assert len(row) == 1, f"{function}: {len(row)} functions"
    names, types, config = row[0]
    assert (names, types) == (["in_row"], ["jsonb"])
    assert "plan_cache_mode=force_generic_plan" in config


def test_journal_rows_written_through_the_functions_read_back_whole(ctx, hotel):
    """A booking's audit, outbox and reservation rows, written with the COMMIT (the journal rows
    through their functions on PostgreSQL), read back with the values the service gave them."""
    from pms.models import AuditEntry

    body = msgspec.convert(reservation_body(hotel), ReservationIn)
    if is_postgres():  # the journal rows go through their functions, not as INSERTs
        with wire_tally() as tally:
            row, created = reservations.create_reservation(ctx, hotel.prop.id, body)
        last = tally.log[-1]
        assert "SELECT pms_write_audit_entry(" in last, last
        assert "SELECT pms_write_outbox_event(" in last, last
        assert 'INSERT INTO "audit_entry"' not in last and 'INSERT INTO "outbox_event"' not in last
    else:
        row, created = reservations.create_reservation(ctx, hotel.prop.id, body)
    assert created
    with read_scope(ctx):
        event = OutboxEvent.get(OutboxEvent.subject == str(row.id))
        audit = AuditEntry.get(AuditEntry.target_id == str(row.id))
    assert (event.type, event.aggregate_version, event.data["confirmation_number"]) == (
        "hotel:pms:reservation:created", 1, row.confirmation_number)
    assert event.published_at is None and event.attempts == 0 and event.lease_owner is None
    assert (audit.action, audit.after["id"], audit.before) == ("reservation.created", str(row.id),
                                                             None)
    assert audit.actor_sub == ctx.sub and audit.request_id == ctx.request_id


def test_an_edit_and_a_cancel_write_the_locked_rows_version_with_the_commit(ctx, hotel):
    """An edit and a cancel lock the reservation (`load_reservation(lock=True)` declares it to
    the unit of work): on PostgreSQL no `version + 1` UPDATE, the row's UPDATE (with its new
    version) goes with the COMMIT; on both backends the events count 1, 2, 3 and the row says 3."""
    from pms.schemas.reservations import ReservationPatch

    row = _book(ctx, hotel)
    patch = msgspec.convert({"notes": "late arrival",
                             "departure_date": str(row.departure_date + timedelta(days=1))},
                            ReservationPatch)
    if is_postgres():
        with wire_tally() as tally:
            edited = reservations.edit_reservation(ctx, hotel.prop.id, row.id, patch)
            cancelled = reservations.cancel_reservation(ctx, hotel.prop.id, row.id)
        assert not [sql for sql in map(_without_ari, tally.log)
                    if re.search(r'"?version"?\s*\+', sql)]
        updates = [sql for sql in tally.log if re.search(r'UPDATE\s+"reservation"\s+SET', sql)]
        assert len(updates) == 2 and all(sql.rstrip().endswith("COMMIT") for sql in updates)
    else:
        edited = reservations.edit_reservation(ctx, hotel.prop.id, row.id, patch)
        cancelled = reservations.cancel_reservation(ctx, hotel.prop.id, row.id)
    with read_scope(ctx):
        stored = Reservation.get_by_id(row.id)
        versions = [e.aggregate_version for e in OutboxEvent.select()
                    .where(OutboxEvent.subject == str(row.id))
                    .order_by(OutboxEvent.aggregate_version)]
    assert versions == [1, 2, 3] and edited.version == 2 and cancelled.version == 3
    assert (stored.version, stored.status, stored.notes) == (3, "CANCELLED", "late arrival")
    assert stored.departure_date == row.departure_date + timedelta(days=1)
