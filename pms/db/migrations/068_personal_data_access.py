"""Migration 068: `personal_data_access`, who read a person's data (one row per person, reader,
kind of read and day, counted; pms.services.privacy.access)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    create = create_tenant_model(migrator, database)

    @create
    class PersonalDataAccess(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        profile_id = pw.UUIDField()
        actor_sub = pw.CharField(max_length=255)
        actor_kind = pw.CharField(max_length=32)
        what = pw.CharField(max_length=32)
        day = pw.DateField()
        reads = pw.IntegerField(default=1)
        first_at = pmsf.UtcDateTimeField()
        last_at = pmsf.UtcDateTimeField()

        class Meta:
            table_name = "personal_data_access"
            indexes = [(('env_id', 'profile_id', 'day', 'actor_sub', 'what'), True)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('personal_data_access')
