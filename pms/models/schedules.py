"""The schedules' own bookkeeping: when each recurring task of the service is next due, and
which host ran it last. A tenant-free table (no env_id, so no RLS and not in ALL_MODELS): it
names schedules, never tenant data. Read and written only by pms.scheduling."""

from __future__ import annotations

import peewee

from pms.db.database import db
from pms.db.fields import JsonField, UtcDateTimeField


class ScheduleTick(peewee.Model):
    """One schedule (pms.scheduling.SCHEDULES): its next due time and its last run."""

    name = peewee.CharField(max_length=64, primary_key=True)
    due_at = UtcDateTimeField()
    owner = peewee.CharField(max_length=64, null=True)
    started_at = UtcDateTimeField(null=True)
    finished_at = UtcDateTimeField(null=True)
    runs = peewee.IntegerField(default=0)
    last_result = JsonField(null=True)

    class Meta:
        database = db
        table_name = "schedule_tick"
