"""Housekeeping: room hk_status marks, tasks, and the reactions to check-out and night audit.

Room marks go through `HK_MACHINE`, task statuses through `HK_TASK_MACHINE` (pms.domain.states).
Reactions (`record_departure`, `create_stayover`) are safe to run twice: every task has a
`dedupe_key` with a unique index, so a redelivered event or a re-run night audit creates nothing
new. `fan_out_stayovers` sends one message per occupied room through the dispatcher its caller
passes (the worker's actor passes its own `.send`; this module never talks to a broker and keeps
no registry); without one the rooms are handled inline.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date
from typing import Any

import peewee
from msgspec import UNSET

from pms.context import Ctx, system_ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.states import (
    HK_MACHINE,
    HK_TASK_INITIAL,
    HK_TASK_MACHINE,
    HK_TASK_TRIGGER,
    HK_TRIGGER,
    HkStatus,
    HkTaskKind,
    HkTaskStatus,
    RoomStatus,
)
from pms.errors import NotFound, ValidationFailed
from pms.events import event_type
from pms.models.housekeeping import HousekeepingTask
from pms.models.property import Room
from pms.schemas.common import to_data
from pms.schemas.housekeeping import (
    HkStatusIn,
    RoomBoardEntry,
    RoomBoardQuery,
    TaskIn,
    TaskOut,
    TaskQuery,
    TaskUpdateIn,
    room_board_entry,
    task_out,
)
from pms.services.catalog.catalog import load_property

ACTIVE_TASK = (HkTaskStatus.OPEN.value, HkTaskStatus.IN_PROGRESS.value)

# (env_id, property_id, room_id, business_date, source_event_id) -> None; passed by the caller.
RoomDispatcher = Callable[..., None]


# -- loading -------------------------------------------------------------------------------------

def _room_by_number(property_id: uuid.UUID, room_number: str, *, lock: bool = False) -> Room:
    query = Room.select().where((Room.property == property_id) & (Room.room_number == room_number))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such room")
    return row


def _open_tasks(room_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    if not room_ids:
        return {}
    rows = (HousekeepingTask.select(HousekeepingTask.room, peewee.fn.COUNT(HousekeepingTask.id))
            .where(HousekeepingTask.room.in_(room_ids) & HousekeepingTask.status.in_(ACTIVE_TASK))
            .group_by(HousekeepingTask.room).tuples())
    return {room_id: n for room_id, n in rows}


def _board_entry(room: Room) -> RoomBoardEntry:
    return room_board_entry(room, _open_tasks([room.id]).get(room.id, 0))


def _task(property_id: uuid.UUID, task_id: uuid.UUID, *, lock: bool = False) -> HousekeepingTask:
    query = HousekeepingTask.select().where((HousekeepingTask.id == task_id)
                                            & (HousekeepingTask.property == property_id))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such housekeeping task")
    return row


def _mark_room(uow: UnitOfWork, room: Room, target: HkStatus, *,
               reason: str | None = None) -> bool:
    """Move the room's hk_status to `target`; False (and nothing written) if already there."""
    new = HK_MACHINE.transition(room.hk_status, HK_TRIGGER[target])
    if new == room.hk_status:
        return False
    before = to_data(_board_entry(room))
    room.hk_status = new.value
    room.save()
    data = to_data(_board_entry(room))
    uow.audit("room.hk_status_changed", room, before=before, after=data, reason=reason)
    uow.emit(event_type("room", "hk_status_changed"), room, data)
    return True


# -- room board ----------------------------------------------------------------------------------

def set_hk_status(ctx: Ctx, property_id: uuid.UUID, room_number: str,
                  body: HkStatusIn) -> RoomBoardEntry:
    """Mark a room CLEAN, DIRTY, INSPECTED, OUT_OF_ORDER or OUT_OF_SERVICE.

    Repeating the current mark is not an error and writes nothing.

    Raises:
        NotFound: no such property or room. InvalidTransition: the move is not in HK_MACHINE
        (e.g. OUT_OF_ORDER -> CLEAN: the room comes back DIRTY first).
    """
    target = HkStatus(body.hk_status)
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        room = _room_by_number(property_id, room_number, lock=True)
        _mark_room(uow, room, target, reason=body.reason)
        entry = _board_entry(room)
    return entry


def room_board(ctx: Ctx, property_id: uuid.UUID, query: RoomBoardQuery) -> Page[RoomBoardEntry]:
    """Every room of the property with its hk_status and number of open tasks."""
    with read_scope(ctx):
        load_property(property_id)
        rooms = Room.select().where(Room.property == property_id)
        if query.hk_status:
            rooms = rooms.where(Room.hk_status == query.hk_status)
        if query.floor:
            rooms = rooms.where(Room.floor == query.floor)
        page = paginate(rooms, Room, limit=query.limit, cursor=query.cursor)
        counts = _open_tasks([r.id for r in page.items])
        return Page(items=[room_board_entry(r, counts.get(r.id, 0)) for r in page.items],
                    next_cursor=page.next_cursor)


# -- tasks ---------------------------------------------------------------------------------------

def _record_task(uow: UnitOfWork, task: HousekeepingTask, room: Room, action: str,
                 before: dict[str, Any] | None = None) -> TaskOut:
    out = task_out(task, room.room_number)
    uow.record("housekeeping_task", action, task, to_data(out), before=before)
    return out


def create_task(ctx: Ctx, property_id: uuid.UUID, body: TaskIn) -> TaskOut:
    """Create a task by hand (an inspection, a deep clean).

    Raises:
        NotFound: no such property or room.
    """
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        room = _room_by_number(property_id, body.room_number)
        task = HousekeepingTask.create(
            property=property_id, room=room.id, kind=body.kind, status=HK_TASK_INITIAL.value,
            assignee=body.assignee, notes=body.notes, business_date=body.business_date,
            dedupe_key=f"manual:{uuid.uuid4()}")
        out = _record_task(uow, task, room, "created")
    return out


def get_task(ctx: Ctx, property_id: uuid.UUID, task_id: uuid.UUID) -> TaskOut:
    with read_scope(ctx):
        load_property(property_id)
        task = _task(property_id, task_id)
        return task_out(task)


def list_tasks(ctx: Ctx, property_id: uuid.UUID, query: TaskQuery) -> Page[TaskOut]:
    """Tasks of a property, oldest first, filtered by status, kind, date, room or assignee."""
    with read_scope(ctx):
        load_property(property_id)
        tasks = (HousekeepingTask.select(HousekeepingTask, Room.id, Room.room_number)
                 .join(Room, on=(HousekeepingTask.room == Room.id))
                 .where(HousekeepingTask.property == property_id))
        if query.status:
            tasks = tasks.where(HousekeepingTask.status == query.status)
        if query.kind:
            tasks = tasks.where(HousekeepingTask.kind == query.kind)
        if query.business_date:
            tasks = tasks.where(HousekeepingTask.business_date == query.business_date)
        if query.room_number:
            tasks = tasks.where(Room.room_number == query.room_number)
        if query.assignee:
            tasks = tasks.where(HousekeepingTask.assignee == query.assignee)
        page = paginate(tasks, HousekeepingTask, limit=query.limit, cursor=query.cursor)
        return Page(items=[task_out(t, t.room.room_number) for t in page.items],
                    next_cursor=page.next_cursor)


def update_task(ctx: Ctx, property_id: uuid.UUID, task_id: uuid.UUID,
                body: TaskUpdateIn) -> TaskOut:
    """Assign, annotate or move a task (OPEN, IN_PROGRESS, DONE, CANCELLED).

    A request that changes nothing writes nothing.

    Raises:
        NotFound: no such property or task. InvalidTransition: e.g. DONE -> OPEN.
    """
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        task = _task(property_id, task_id, lock=True)
        room = Room.get_by_id(task.room_id)
        before = to_data(task_out(task, room.room_number))
        changed = False
        if body.status is not UNSET:
            new = HK_TASK_MACHINE.transition(task.status, HK_TASK_TRIGGER[HkTaskStatus(body.status)])
            if new != task.status:
                task.status = new.value
                task.completed_at = ctx.now if new == HkTaskStatus.DONE else None
                changed = True
        for name in ("assignee", "notes"):
            value = getattr(body, name)
            if value is not UNSET and value != getattr(task, name):
                setattr(task, name, value)
                changed = True
        if changed:
            task.save()
            out = _record_task(uow, task, room, "updated", before)
        else:
            out = task_out(task, room.room_number)
    return out


# -- reactions (actors call these; safe to run twice) --------------------------------------------

def _existing(dedupe_key: str) -> HousekeepingTask | None:
    return HousekeepingTask.get_or_none(HousekeepingTask.dedupe_key == dedupe_key)


def _create_reaction_task(ctx: Ctx, room_id: uuid.UUID, kind: HkTaskKind, dedupe_key: str, *,
                          business_date: date | None, reservation_id: uuid.UUID | None,
                          source_event_id: str | None,
                          require_occupied: bool = False) -> HousekeepingTask | None:
    try:
        with unit_of_work(ctx) as uow:
            room = for_update(Room.select().where(Room.id == room_id)).first()
            if room is None:
                raise NotFound("no such room")
            task = _existing(dedupe_key)
            skip = task is not None or (require_occupied and room.status != RoomStatus.OCCUPIED)
            if not skip:
                if room.hk_status not in (HkStatus.OUT_OF_ORDER, HkStatus.OUT_OF_SERVICE):
                    _mark_room(uow, room, HkStatus.DIRTY, reason=kind.value.lower())
                task = HousekeepingTask.create(
                    property=room.property_id, room=room.id, kind=kind.value,
                    status=HK_TASK_INITIAL.value, business_date=business_date,
                    reservation_id=reservation_id, dedupe_key=dedupe_key,
                    source_event_id=source_event_id)
                _record_task(uow, task, room, "created")
        return task
    except peewee.IntegrityError:
        # Two deliveries raced past the existence check: the unique dedupe key kept one.
        with read_scope(ctx):
            return _existing(dedupe_key)


def record_departure(ctx: Ctx, reservation_id: uuid.UUID, *,
                     source_event_id: str | None = None) -> HousekeepingTask | None:
    """After a check-out: the room is DIRTY and has one DEPARTURE_CLEAN task.

    Returns None when the reservation had no room. Raises NotFound for an unknown reservation.
    """
    from pms.models.reservations import Reservation

    with read_scope(ctx):
        reservation = Reservation.get_or_none(Reservation.id == reservation_id)
        if reservation is None:
            raise NotFound("no such reservation")
        business_date = getattr(reservation, "checked_out_business_date", None)
    if reservation.room_id is None:
        return None
    return _create_reaction_task(
        ctx, reservation.room_id, HkTaskKind.DEPARTURE_CLEAN, f"departure:{reservation_id}",
        business_date=business_date, reservation_id=reservation_id,
        source_event_id=source_event_id)


def create_stayover(ctx: Ctx, room_id: uuid.UUID, business_date: date, *,
                    source_event_id: str | None = None) -> HousekeepingTask | None:
    """Night audit, per occupied room: room DIRTY and one STAYOVER task for that date.

    A room that is no longer occupied gets nothing (None).
    """
    return _create_reaction_task(
        ctx, room_id, HkTaskKind.STAYOVER, f"stayover:{room_id}:{business_date.isoformat()}",
        business_date=business_date, reservation_id=None, source_event_id=source_event_id,
        require_occupied=True)


def occupied_rooms(ctx: Ctx, property_id: uuid.UUID) -> list[uuid.UUID]:
    with read_scope(ctx):
        return [r.id for r in Room.select(Room.id).where(
            (Room.property == property_id) & (Room.status == RoomStatus.OCCUPIED.value))
            .order_by(Room.room_number)]


def fan_out_stayovers(env_id: uuid.UUID, property_id: uuid.UUID, business_date: date, *,
                      source_event_id: str | None = None,
                      dispatch: RoomDispatcher | None = None) -> int:
    """One stayover message per occupied room of the property (the night audit calls this
    after its transaction committed). Returns the number of rooms. Idempotent.

    `dispatch` sends each room's message (the worker passes its actor's); without it the
    rooms are handled inline.

    Raises:
        ValidationFailed: business_date is not a date.
    """
    if not isinstance(business_date, date):
        raise ValidationFailed("business_date must be a date")
    ctx = system_ctx(env_id, sub="housekeeping-fan-out")
    rooms = occupied_rooms(ctx, property_id)
    for room_id in rooms:
        if dispatch is not None:
            dispatch(env_id, property_id, room_id, business_date, source_event_id)
        else:
            create_stayover(ctx, room_id, business_date, source_event_id=source_event_id)
    return len(rooms)
