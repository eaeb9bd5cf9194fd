"""Housekeeping service rules: hk_status table, tasks, and reactions that are safe to run twice."""

from __future__ import annotations

import uuid
from datetime import date

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import HK_MACHINE, ROOM_MACHINE, HkStatus
from pms.errors import InvalidTransition, NotFound
from pms.models import HousekeepingTask, Room
from pms.schemas.housekeeping import HkStatusIn, TaskIn, TaskUpdateIn
from pms.services.housekeeping import housekeeping as hk
from tests.factories import make_property, make_room, make_room_type
from tests.helpers import counts, outbox_types


@pytest.fixture
def hotel(ctx, database):
    prop = make_property(ctx)
    rt = make_room_type(ctx, prop.id)
    rooms = [make_room(ctx, prop.id, rt.id, room_number=f"{n}") for n in (101, 102, 103)]
    return prop, rooms


def occupy(ctx, room):
    with unit_of_work(ctx):
        row = Room.get_by_id(room.id)
        row.status = ROOM_MACHINE.transition(row.status, "occupy").value
        row.save()


def test_every_hk_status_pair_is_in_the_table_or_refused():
    for state in HkStatus:
        for trigger in ("clean", "dirty", "inspect", "out_of_order", "out_of_service"):
            if HK_MACHINE.can(state, trigger):
                assert isinstance(HK_MACHINE.transition(state, trigger), HkStatus)
            else:
                with pytest.raises(InvalidTransition):
                    HK_MACHINE.transition(state, trigger)
    assert not HK_MACHINE.can(HkStatus.OUT_OF_ORDER, "clean")
    assert not HK_MACHINE.can(HkStatus.DIRTY, "inspect")


def test_set_hk_status_writes_one_event_and_one_audit(ctx, hotel):
    prop, rooms = hotel
    before = counts(ctx)
    entry = hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status="DIRTY"))
    assert entry.hk_status == "DIRTY"
    after = counts(ctx)
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
    assert outbox_types(ctx)[-1] == "hotel:pms:room:hk_status_changed"


def test_hk_marks_of_a_locked_room_keep_its_versions_in_step(ctx, hotel):
    """The room is locked by the mark (its version goes with the COMMIT on PostgreSQL,
    UnitOfWork.locked): its events count on from the room's version, one by one, and the
    room's stored version is the last event's."""
    from pms.models.platform import OutboxEvent

    prop, rooms = hotel
    with read_scope(ctx):
        start = Room.get_by_id(rooms[0].id).version
    for mark in ("DIRTY", "CLEAN", "OUT_OF_ORDER", "DIRTY"):
        hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status=mark))
    with read_scope(ctx):
        stored = Room.get_by_id(rooms[0].id)
        versions = [e.aggregate_version for e in OutboxEvent.select()
                    .where((OutboxEvent.subject == str(rooms[0].id))
                           & (OutboxEvent.type == "hotel:pms:room:hk_status_changed"))
                    .order_by(OutboxEvent.aggregate_version)]
    assert versions == [start + 1, start + 2, start + 3, start + 4]
    assert (stored.version, stored.hk_status) == (start + 4, "DIRTY")


def test_repeating_the_current_mark_writes_nothing(ctx, hotel):
    prop, _ = hotel
    hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status="DIRTY"))
    before = counts(ctx)
    hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status="DIRTY"))
    assert counts(ctx) == before


def test_out_of_order_room_cannot_jump_to_clean(ctx, hotel):
    prop, _ = hotel
    hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status="OUT_OF_ORDER", reason="leak"))
    with pytest.raises(InvalidTransition):
        hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status="CLEAN"))
    assert hk.set_hk_status(ctx, prop.id, "101", HkStatusIn(hk_status="DIRTY")).hk_status == "DIRTY"


def test_unknown_room_is_not_found(ctx, hotel):
    prop, _ = hotel
    with pytest.raises(NotFound):
        hk.set_hk_status(ctx, prop.id, "999", HkStatusIn(hk_status="DIRTY"))


def test_task_lifecycle_and_no_op_update(ctx, hotel):
    prop, _ = hotel
    task = hk.create_task(ctx, prop.id, TaskIn(room_number="102", kind="INSPECTION"))
    assert task.status == "OPEN"
    done = hk.update_task(ctx, prop.id, task.id, TaskUpdateIn(status="DONE", assignee="maria"))
    assert done.status == "DONE" and done.completed_at is not None and done.assignee == "maria"
    before = counts(ctx)
    hk.update_task(ctx, prop.id, task.id, TaskUpdateIn(status="DONE"))
    assert counts(ctx) == before
    with pytest.raises(InvalidTransition):
        hk.update_task(ctx, prop.id, task.id, TaskUpdateIn(status="OPEN"))


def test_stayover_reaction_runs_twice_without_duplicate(ctx, hotel):
    prop, rooms = hotel
    occupy(ctx, rooms[0])
    day = date(2026, 3, 1)
    first = hk.create_stayover(ctx, rooms[0].id, day, source_event_id="e1")
    second = hk.create_stayover(ctx, rooms[0].id, day, source_event_id="e1")
    assert first.id == second.id
    with read_scope(ctx):
        assert HousekeepingTask.select().where(HousekeepingTask.kind == "STAYOVER").count() == 1
        assert Room.get_by_id(rooms[0].id).hk_status == "DIRTY"


def test_fan_out_stayovers_covers_only_occupied_rooms_and_is_idempotent(ctx, hotel):
    prop, rooms = hotel
    occupy(ctx, rooms[0])
    occupy(ctx, rooms[2])
    day = date(2026, 3, 2)
    assert hk.fan_out_stayovers(ctx.env_id, prop.id, day) == 2
    assert hk.fan_out_stayovers(ctx.env_id, prop.id, day) == 2
    with read_scope(ctx):
        tasks = list(HousekeepingTask.select().where(HousekeepingTask.business_date == day))
    assert sorted(t.room_id for t in tasks) == sorted([rooms[0].id, rooms[2].id])


def test_fan_out_uses_the_dispatcher_its_caller_passes(ctx, hotel):
    prop, rooms = hotel
    occupy(ctx, rooms[1])
    sent = []
    assert hk.fan_out_stayovers(ctx.env_id, prop.id, date(2026, 3, 3),
                                dispatch=lambda *args: sent.append(args)) == 1
    assert not hasattr(hk, "set_room_dispatcher")  # no process-wide registry to forget
    assert sent == [(ctx.env_id, prop.id, rooms[1].id, date(2026, 3, 3), None)]


def test_stayover_skips_a_room_no_longer_occupied(ctx, hotel):
    _, rooms = hotel
    assert hk.create_stayover(ctx, rooms[1].id, date(2026, 3, 4)) is None


def test_departure_for_unknown_reservation_is_not_found(ctx, hotel):
    with pytest.raises(NotFound):
        hk.record_departure(ctx, uuid.uuid4())
