"""The privacy package's tables (migrations 059, 068)."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, TenantModel, UtcDateTimeField
from pms.models.profiles import Profile


class Consent(AggregateModel):
    """One grant or withdrawal of a purpose by a profile; never updated (the newest record of a
    purpose is the profile's current consent, the older ones are the proof Art. 7(1) asks)."""

    profile = peewee.ForeignKeyField(Profile, backref="consent_records", on_delete="CASCADE",
                                     index=False)
    purpose = peewee.CharField(max_length=32)
    granted = peewee.BooleanField()
    source = peewee.CharField(max_length=32)
    text_version = peewee.CharField(max_length=64)
    recorded_at = UtcDateTimeField()
    recorded_by = peewee.CharField(max_length=255)

    class Meta:
        table_name = "consent"
        indexes = ((("env_id", "profile", "purpose", "recorded_at"), False),)


class PersonalDataAccess(TenantModel):
    """Who read a person's data: one row per person, reader, kind of read and day, with the
    count and the first and last time (what a data-protection officer asks; GDPR Art. 5(2)).
    The person reading their own data is not recorded."""

    profile_id = peewee.UUIDField()
    actor_sub = peewee.CharField(max_length=255)
    actor_kind = peewee.CharField(max_length=32)
    what = peewee.CharField(max_length=32)  # profile, personal_data, export
    day = peewee.DateField()
    reads = peewee.IntegerField(default=1)
    first_at = UtcDateTimeField()
    last_at = UtcDateTimeField()

    class Meta:
        table_name = "personal_data_access"
        indexes = ((("env_id", "profile_id", "day", "actor_sub", "what"), True),)
