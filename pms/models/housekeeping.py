"""Housekeeping tasks (departure cleans, stayovers, inspections). The room's own `hk_status`
lives on `pms.models.property.Room`; its transitions are `HK_MACHINE` in pms.domain.states."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, UtcDateTimeField
from pms.models.property import Property, Room


class HousekeepingTask(AggregateModel):
    """One job for one room. `dedupe_key` makes reactions safe to run twice: a departure clean
    is keyed by its reservation, a stayover by room and business date."""

    property = peewee.ForeignKeyField(Property, backref="hk_tasks", on_delete="RESTRICT", index=False)
    room = peewee.ForeignKeyField(Room, backref="hk_tasks", on_delete="CASCADE", index=False)
    kind = peewee.CharField(max_length=24)
    status = peewee.CharField(max_length=16)
    assignee = peewee.CharField(max_length=120, null=True)
    notes = peewee.TextField(null=True)
    business_date = peewee.DateField(null=True)
    reservation_id = peewee.UUIDField(null=True)
    dedupe_key = peewee.CharField(max_length=160)
    source_event_id = peewee.CharField(max_length=64, null=True)
    completed_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "housekeeping_task"
        indexes = (
            (("env_id", "dedupe_key"), True),
            (("env_id", "property", "status", "business_date"), False),
            (("env_id", "room", "created_at"), False),
        )
