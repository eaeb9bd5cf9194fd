"""Migration 043: allotments per rate plan, room type and night (`rate_plan_allotment`,
born shard-ready), and the reservations' index by (rate plan, room type, arrival) under which a
plan's rooms sold on a night are counted (pms.queries.allotments)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @create_tenant_model(migrator, database)
    class RatePlanAllotment(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='CASCADE')
        rate_plan = pw.ForeignKeyField(index=False, column_name='rate_plan_id', field='id',
                                       model=migrator.orm['rate_plan'], on_delete='CASCADE')
        room_type = pw.ForeignKeyField(index=False, column_name='room_type_id', field='id',
                                       model=migrator.orm['room_type'], on_delete='CASCADE')
        date = pw.DateField()
        allotment = pw.IntegerField()

        class Meta:
            table_name = "rate_plan_allotment"
            indexes = [(('env_id', 'rate_plan', 'room_type', 'date'), True),
                       (('env_id', 'property', 'date'), False),
                       (('env_id', 'room_type'), False)]

    migrator.add_index('reservation', 'env_id', 'rate_plan', 'room_type', 'arrival_date',
                       unique=False)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.drop_index('reservation', 'env_id', 'rate_plan', 'room_type', 'arrival_date')
    migrator.remove_model('rate_plan_allotment')
