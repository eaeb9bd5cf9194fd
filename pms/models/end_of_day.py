"""Night audit runs: one row per (env, property, business date), its step records (counts and
timings) and the end-of-day log (the day's figures). Fields and indexes only."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, TenantModel, UtcDateTimeField
from pms.models.property import Property


class NightAuditRun(AggregateModel):
    """The night audit of one property for one business date (unique): a second run answers
    with this row; a FAILED or interrupted RUNNING row is resumed step by step."""

    property = peewee.ForeignKeyField(Property, backref="night_audits", on_delete="RESTRICT",
                                       index=False)
    business_date = peewee.DateField()
    status = peewee.CharField(max_length=16)
    started_at = UtcDateTimeField()
    finished_at = UtcDateTimeField(null=True)
    attempts = peewee.IntegerField(default=1)
    figures = JsonField(null=True)  # the end-of-day log of the day
    error = peewee.TextField(null=True)

    class Meta:
        table_name = "night_audit_run"
        indexes = ((("env_id", "property", "business_date"), True),)


class NightAuditStep(TenantModel):
    """One finished step of a run: a re-run skips steps that have a row here."""

    run = peewee.ForeignKeyField(NightAuditRun, backref="steps", on_delete="CASCADE",
                                  index=False)
    name = peewee.CharField(max_length=40)
    position = peewee.IntegerField()
    count = peewee.IntegerField(default=0)
    duration_ms = peewee.FloatField(default=0)
    detail = JsonField(null=True)

    class Meta:
        table_name = "night_audit_step"
        indexes = ((("env_id", "run", "name"), True),)
