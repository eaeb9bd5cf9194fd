"""Migration 026: lists of values, settings documents and property images.

One primary image per property is the database's rule: a partial unique index on
(env_id, property_id) WHERE is_primary, on PostgreSQL and SQLite alike (both have partial
indexes).
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class LovEntry(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        list_name = pw.CharField(max_length=64)
        code = pw.CharField(max_length=64)
        name = pw.CharField(max_length=200)
        description = pw.TextField(null=True)
        active = pw.BooleanField(default=True)
        sort_order = pw.IntegerField(default=0)

        class Meta:
            table_name = "lov_entry"
            indexes = [(('env_id', 'list_name', 'code'), True)]

    @migrator.create_model
    class SettingsDocument(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        kind = pw.CharField(max_length=32)
        scope_key = pw.CharField(max_length=64)
        property = pw.ForeignKeyField(index=False, null=True, column_name='property_id',
                                      field='id', model=migrator.orm['property'],
                                      on_delete='CASCADE')
        document = pmsf.JsonField()

        class Meta:
            table_name = "settings_document"
            indexes = [(('env_id', 'kind', 'scope_key'), True)]

    @migrator.create_model
    class PropertyImage(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='RESTRICT')
        object_key = pw.CharField(max_length=300)
        sha256 = pw.CharField(max_length=64)
        content_type = pw.CharField(max_length=32)
        size_bytes = pw.IntegerField()
        caption = pw.CharField(max_length=500, null=True)
        is_primary = pw.BooleanField(default=False)

        class Meta:
            table_name = "property_image"
            indexes = [(('env_id', 'property', 'created_at'), False)]

    migrator.sql("CREATE UNIQUE INDEX IF NOT EXISTS property_image_one_primary "
                 "ON property_image (env_id, property_id) WHERE is_primary")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Drop the tables of migration 026."""
    migrator.sql("DROP INDEX IF EXISTS property_image_one_primary")
    migrator.remove_model('property_image')
    migrator.remove_model('settings_document')
    migrator.remove_model('lov_entry')
