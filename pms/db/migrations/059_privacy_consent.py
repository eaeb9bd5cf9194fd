"""Migration 059: `consent`, a guest's consents as records (GDPR Art. 7): one row per grant or
withdrawal of a purpose, with its source, the text version agreed to and when. Rows are never
updated: the current consent of a purpose is its newest record (pms.services.privacy.consents)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    create = create_tenant_model(migrator, database)

    @create
    class Consent(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        profile = pw.ForeignKeyField(index=False, column_name='profile_id', field='id',
                                     model=migrator.orm['profile'], on_delete='CASCADE')
        purpose = pw.CharField(max_length=32)
        granted = pw.BooleanField()
        source = pw.CharField(max_length=32)
        text_version = pw.CharField(max_length=64)
        recorded_at = pmsf.UtcDateTimeField()
        recorded_by = pw.CharField(max_length=255)

        class Meta:
            table_name = "consent"
            indexes = [(('env_id', 'profile', 'purpose', 'recorded_at'), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('consent')
