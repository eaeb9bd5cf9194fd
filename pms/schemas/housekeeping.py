"""Housekeeping: the room board (hk_status per room) and housekeeping tasks."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.domain.states import RoomStatus
from pms.schemas.common import ListQuery, Out, RoomNumber, Strict, Text

HkStatusName = Literal["CLEAN", "DIRTY", "INSPECTED", "OUT_OF_ORDER", "OUT_OF_SERVICE"]
TaskKind = Literal["DEPARTURE_CLEAN", "STAYOVER", "INSPECTION", "TURNDOWN", "DEEP_CLEAN"]
TaskStatus = Literal["OPEN", "IN_PROGRESS", "DONE", "CANCELLED"]
Assignee = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class HkStatusIn(Strict):
    """The mark asked for; the move must be in the hk_status transition table (else 409)."""

    hk_status: HkStatusName
    reason: Reason | None = None


class RoomBoardEntry(Out):
    room_id: uuid.UUID
    property_id: uuid.UUID
    room_number: str
    room_type_id: uuid.UUID
    floor: str | None
    status: RoomStatus
    hk_status: HkStatusName
    open_tasks: int
    updated_at: datetime


class RoomBoardQuery(ListQuery):
    hk_status: HkStatusName | None = None
    floor: Annotated[str, msgspec.Meta(max_length=16)] | None = None


class TaskIn(Strict):
    room_number: RoomNumber
    kind: TaskKind
    business_date: date | None = None
    assignee: Assignee | None = None
    notes: Text | None = None


class TaskUpdateIn(Strict):
    status: TaskStatus | UnsetType = UNSET
    assignee: Assignee | None | UnsetType = UNSET
    notes: Text | None | UnsetType = UNSET


class TaskQuery(ListQuery):
    status: TaskStatus | None = None
    kind: TaskKind | None = None
    business_date: date | None = None
    room_number: RoomNumber | None = None
    assignee: Assignee | None = None


class TaskOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    room_id: uuid.UUID
    room_number: str
    kind: TaskKind
    status: TaskStatus
    assignee: str | None
    notes: str | None
    business_date: date | None
    reservation_id: uuid.UUID | None
    source_event_id: str | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime


def room_board_entry(room: object, open_tasks: int = 0) -> RoomBoardEntry:
    return RoomBoardEntry(
        room_id=room.id, property_id=room.property_id, room_number=room.room_number,
        room_type_id=room.room_type_id, floor=room.floor, status=room.status,
        hk_status=room.hk_status, open_tasks=open_tasks, updated_at=room.updated_at)


def task_out(t: object, room_number: str | None = None) -> TaskOut:
    return TaskOut(
        id=t.id, property_id=t.property_id, room_id=t.room_id,
        room_number=room_number or t.room.room_number, kind=t.kind, status=t.status,
        assignee=t.assignee, notes=t.notes, business_date=t.business_date,
        reservation_id=t.reservation_id, source_event_id=t.source_event_id,
        completed_at=t.completed_at, created_at=t.created_at, updated_at=t.updated_at)
