"""The unit of work times its writes, and a use case reads back what it wrote.

- `a_saved_row_reads_back_...`: `uow.save(row)` then a query in the same unit of work sees the
  new value, on both backends; on PostgreSQL the queued UPDATE goes out in the read's own round
  trip (the autoflush costs none), and one round trip more than the read-free use case would be
  the COMMIT's own: counted on the wire.
- `without_the_autoflush_...` (control): the same use case with the autoflush switched off
  (TEST-ONLY: `pms.db.database.take_pending_writes` replaced by nothing) reads the OLD value:
  the queued UPDATE had not been sent.
- `a_queued_statement_...`: a compiled write queued by `uow.queue` is read back as well.
- `a_row_inserted_at_version_1_is_born` / `a_row_read_for_update_is_declared_locked`: the unit
  of work learns what it used to be told (`born`, `locked_row`): the created event takes version
  1 with no version UPDATE; a row read with its lock is declared (PostgreSQL), its event's
  version goes with the queued writes and lands in the database.
"""

from __future__ import annotations

import uuid

from pms.db import database as database_module
from pms.db.database import is_postgres
from pms.db.locking import for_update
from pms.db.statements import Statement
from pms.db.uow import read_scope, unit_of_work
from pms.models import OutboxEvent, Property, Room
from tests.factories import make_property, make_room, make_room_type
from tests.helpers import wire_tally

_RENAME = Statement.text("tests.rename_property", both=(
    "UPDATE property SET name = %(name)s, updated_at = %(at)s"
    " WHERE env_id = %(env)s AND id = %(id)s"))


def _save_then_read(ctx, prop_id) -> tuple[str, str]:
    """In one unit of work: the property renamed by `uow.save`, then its name read by a query;
    (the name read, the name stored after the commit)."""
    with unit_of_work(ctx) as uow:
        row = Property.get_by_id(prop_id)
        row.name = "after"
        uow.save(row)
        read = Property.select(Property.name).where(Property.id == prop_id).scalar()
    with read_scope(ctx):
        stored = Property.get_by_id(prop_id).name
    return read, stored


def test_a_saved_row_reads_back_in_the_same_unit_of_work(database, ctx):
    prop = make_property(ctx, name="before")
    read, stored = _save_then_read(ctx, prop.id)
    assert read == "after" and stored == "after"


def test_the_autoflush_costs_no_round_trip_of_its_own(pg_db, ctx):
    prop = make_property(ctx, name="before")
    with wire_tally() as reading:
        read, _ = _save_then_read(ctx, prop.id)
    assert read == "after"
    # the row's read, the name's read carrying the queued UPDATE, the COMMIT (nothing left to
    # go with it); plus the read-back after the commit
    assert reading.round_trips == 4, "\n---\n".join(reading.log or [])
    with wire_tally() as silent:  # the same use case without the read: the UPDATE rides the COMMIT
        with unit_of_work(ctx) as uow:
            row = Property.get_by_id(prop.id)
            row.name = "again"
            uow.save(row)
    assert silent.round_trips == 2, "\n---\n".join(silent.log or [])


def test_without_the_autoflush_the_read_sees_the_old_value(database, ctx, monkeypatch):
    prop = make_property(ctx, name="before")
    # TEST-ONLY control: the queued writes are not sent before the read
    monkeypatch.setattr(database_module, "take_pending_writes", lambda: None)
    read, stored = _save_then_read(ctx, prop.id)
    assert read == "before"  # the race the autoflush closes: the use case read its old row
    assert stored == "after"  # (the UPDATE still went out, with the COMMIT)


def test_a_queued_statement_is_read_back(database, ctx):
    prop = make_property(ctx, name="before")
    with unit_of_work(ctx) as uow:
        from pms.db.fields import utcnow

        if is_postgres():  # a fast path's queued write
            uow.queue(_RENAME, {"name": "written", "at": utcnow(), "id": prop.id})
            assert uow.pending()  # not sent yet
        else:  # its reference writes at once
            Property.update(name="written").where(Property.id == prop.id).execute()
        read = Property.select(Property.name).where(Property.id == prop.id).scalar()
    assert read == "written"


def test_a_row_inserted_at_version_1_is_born(database, ctx):
    prop = make_property(ctx)
    room_type = make_room_type(ctx, prop.id)
    with unit_of_work(ctx) as uow:
        row = Room(id=uuid.uuid4(), property=prop.id, room_type=room_type.id, room_number="901",
                   version=1)
        row.save(force_insert=True)
        assert (Room, row.id) in uow._born  # declared by the insert, not by the service
        uow.record("room", "created", row, {"roomNumber": "901"})
    with read_scope(ctx):
        event = OutboxEvent.get(OutboxEvent.subject == str(row.id))
        assert event.aggregate_version == 1 and Room.get_by_id(row.id).version == 1


def test_a_row_read_for_update_is_declared_locked(database, ctx):
    prop = make_property(ctx)
    room_type = make_room_type(ctx, prop.id)
    room = make_room(ctx, prop.id, room_type.id, room_number="902")
    with read_scope(ctx):
        start = Room.get_by_id(room.id).version
    with unit_of_work(ctx) as uow:
        row = for_update(Room.select().where(Room.id == room.id)).get()
        assert ((Room, row.id) in uow._locked) is is_postgres()  # SQLite takes no row lock
        row.hk_status = "DIRTY"
        uow.save(row)
        uow.record("room", "updated", row, {"hkStatus": "DIRTY"})
        # read-your-writes, the version too (queued on PostgreSQL)
        assert Room.select(Room.version).where(Room.id == room.id).scalar() == start + 1
    with read_scope(ctx):
        assert Room.get_by_id(room.id).version == start + 1
        assert OutboxEvent.get(OutboxEvent.subject == str(room.id),
                               OutboxEvent.aggregate_version == start + 1)
