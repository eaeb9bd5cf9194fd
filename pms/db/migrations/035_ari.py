"""Migration 035: the ARI stream per room type (the aggregate of
`hotel:pms:ari:updated`) and the through-stay lengths of stay of a restriction."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class AriStream(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='CASCADE')

        class Meta:
            table_name = "ari_stream"
            indexes = [(('env_id', 'id'), True), (('env_id', 'property'), False)]

    migrator.add_fields('restriction', min_stay_through=pw.IntegerField(null=True),
                        max_stay_through=pw.IntegerField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('restriction', 'min_stay_through', 'max_stay_through')
    migrator.remove_model('ari_stream')
