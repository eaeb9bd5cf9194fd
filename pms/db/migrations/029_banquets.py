"""Migration 029: function spaces, banquet events, their per-element space bookings,
event resource items (stock), event resources and event postings.

PostgreSQL: `btree_gist` (a trusted extension: the database owner, which migrates, may create
it) and an exclusion constraint on function_space_booking: no two rows of one env and one
element space over overlapping [starts, ends) intervals. SQLite has no such constraint: the
service checks under the write lock (pms.services.groups.banquets).
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf

EXCLUSION = ("ALTER TABLE function_space_booking ADD CONSTRAINT function_space_no_overlap "
             "EXCLUDE USING gist (env_id WITH =, space_id WITH =, "
             "tstzrange(starts, ends, '[)') WITH &&)")


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class FunctionSpace(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='RESTRICT')
        name = pw.CharField(max_length=200)
        capacities = pmsf.JsonField()
        element_ids = pmsf.JsonField()
        out_of_order = pmsf.JsonField()

        class Meta:
            table_name = "function_space"
            indexes = [(('env_id', 'property', 'name'), True)]

    @migrator.create_model
    class BanquetEvent(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='RESTRICT')
        space = pw.ForeignKeyField(index=False, column_name='space_id', field='id',
                                   model=migrator.orm['function_space'], on_delete='RESTRICT')
        block_id = pw.UUIDField(null=True)
        folio_id = pw.UUIDField(null=True)
        name = pw.CharField(max_length=200)
        status = pw.CharField(max_length=16)
        setup_style = pw.CharField(max_length=16)
        start_at = pmsf.UtcDateTimeField()
        end_at = pmsf.UtcDateTimeField()
        setup_minutes = pw.IntegerField(default=0)
        teardown_minutes = pw.IntegerField(default=0)
        attendees_forecast = pw.IntegerField()
        attendees_guaranteed = pw.IntegerField(null=True)
        attendees_actual = pw.IntegerField(null=True)

        class Meta:
            table_name = "banquet_event"
            indexes = [(('env_id', 'property', 'start_at'), False), (('env_id', 'space'), False)]

    @migrator.create_model
    class SpaceBooking(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        event = pw.ForeignKeyField(index=False, column_name='event_id', field='id',
                                   model=migrator.orm['banquet_event'], on_delete='CASCADE')
        space_id = pw.UUIDField()
        starts = pmsf.UtcDateTimeField()
        ends = pmsf.UtcDateTimeField()

        class Meta:
            table_name = "function_space_booking"
            indexes = [(('env_id', 'space_id', 'starts'), False), (('env_id', 'event'), False)]

    @migrator.create_model
    class EventResourceItem(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        kind = pw.CharField(max_length=16)
        stock = pw.IntegerField()
        unit_price = pmsf.MoneyField()
        per_attendee = pw.BooleanField(default=False)
        transaction_code = pw.CharField(max_length=32)

        class Meta:
            table_name = "event_resource_item"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class EventResource(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        event = pw.ForeignKeyField(index=False, column_name='event_id', field='id',
                                   model=migrator.orm['banquet_event'], on_delete='CASCADE')
        item = pw.ForeignKeyField(index=False, column_name='item_id', field='id',
                                  model=migrator.orm['event_resource_item'], on_delete='RESTRICT')
        quantity = pw.IntegerField()
        starts = pmsf.UtcDateTimeField()
        ends = pmsf.UtcDateTimeField()

        class Meta:
            table_name = "event_resource"
            indexes = [(('env_id', 'event', 'item'), True), (('env_id', 'item', 'starts'), False)]

    @migrator.create_model
    class EventPosting(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        event = pw.ForeignKeyField(index=False, column_name='event_id', field='id',
                                   model=migrator.orm['banquet_event'], on_delete='RESTRICT')
        resource_id = pw.UUIDField()
        folio_id = pw.UUIDField()
        posted_quantity = pw.IntegerField()
        posted_amount = pmsf.MoneyField()
        transaction_code = pw.CharField(max_length=32, null=True)

        class Meta:
            table_name = "event_posting"
            indexes = [(('env_id', 'event', 'resource_id'), True)]

    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("CREATE EXTENSION IF NOT EXISTS btree_gist")
        migrator.sql(EXCLUSION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Drop the tables of migration 029 (the btree_gist extension stays: others may use it)."""
    migrator.remove_model('event_posting')
    migrator.remove_model('event_resource')
    migrator.remove_model('event_resource_item')
    migrator.remove_model('function_space_booking')
    migrator.remove_model('banquet_event')
    migrator.remove_model('function_space')
