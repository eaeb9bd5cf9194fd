"""Migration 002: inventory days, maintenance, rate schedules, restrictions and promo codes."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf



def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class InventoryDay(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(column_name='property_id', field='id', model=migrator.orm['property'], index=False, on_delete='CASCADE')
        room_type = pw.ForeignKeyField(column_name='room_type_id', field='id', model=migrator.orm['room_type'], index=False, on_delete='CASCADE')
        date = pw.DateField()
        physical = pw.IntegerField(default=0)
        ooo = pw.IntegerField(default=0)
        oos = pw.IntegerField(default=0)
        sell_limit = pw.IntegerField(null=True)
        sold = pw.IntegerField(default=0)

        class Meta:
            table_name = "inventory_day"
            indexes = [(('env_id', 'room_type', 'date'), True), (('env_id', 'property', 'date'), False)]

    @migrator.create_model
    class Maintenance(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(column_name='property_id', field='id', model=migrator.orm['property'], index=False, on_delete='CASCADE')
        room = pw.ForeignKeyField(column_name='room_id', field='id', model=migrator.orm['room'], index=False, on_delete='CASCADE')
        kind = pw.CharField(max_length=16)
        from_date = pw.DateField()
        to_date = pw.DateField()
        reason = pw.TextField(null=True)
        active = pw.BooleanField(default=True)

        class Meta:
            table_name = "maintenance"
            indexes = [(('env_id', 'property', 'from_date'), False), (('env_id', 'room'), False)]

    @migrator.create_model
    class PromoCode(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(column_name='property_id', field='id', model=migrator.orm['property'], index=False, on_delete='CASCADE')
        code = pw.CharField(max_length=32)
        description = pw.TextField(null=True)
        discount_type = pw.CharField(max_length=8)
        discount_value = pmsf.MoneyField()
        currency = pw.CharField(max_length=3, null=True)
        valid_from = pw.DateField(null=True)
        valid_to = pw.DateField(null=True)
        min_nights = pw.IntegerField(null=True)
        rate_plan_ids = pmsf.JsonField()
        active = pw.BooleanField(default=True)

        class Meta:
            table_name = "promo_code"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class RateSchedule(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(column_name='property_id', field='id', model=migrator.orm['property'], index=False, on_delete='CASCADE')
        rate_plan = pw.ForeignKeyField(column_name='rate_plan_id', field='id', model=migrator.orm['rate_plan'], index=False, on_delete='CASCADE')
        room_type = pw.ForeignKeyField(column_name='room_type_id', field='id', model=migrator.orm['room_type'], index=False, on_delete='CASCADE')
        date = pw.DateField()
        amount = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)

        class Meta:
            table_name = "rate_schedule"
            indexes = [(('env_id', 'rate_plan', 'room_type', 'date'), True), (('env_id', 'property', 'date'), False), (('env_id', 'room_type'), False)]

    @migrator.create_model
    class Restriction(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(column_name='property_id', field='id', model=migrator.orm['property'], index=False, on_delete='CASCADE')
        rate_plan = pw.ForeignKeyField(column_name='rate_plan_id', field='id', model=migrator.orm['rate_plan'], null=True, index=False, on_delete='CASCADE')
        room_type = pw.ForeignKeyField(column_name='room_type_id', field='id', model=migrator.orm['room_type'], null=True, index=False, on_delete='CASCADE')
        date = pw.DateField()
        min_los = pw.IntegerField(null=True)
        max_los = pw.IntegerField(null=True)
        closed = pw.BooleanField(default=False)
        closed_to_arrival = pw.BooleanField(default=False)
        closed_to_departure = pw.BooleanField(default=False)

        class Meta:
            table_name = "restriction"
            indexes = [(('env_id', 'property', 'date'), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Drop the tables this migration created."""
    for table in ("restriction", "rate_schedule", "promo_code", "maintenance", "inventory_day"):
        migrator.remove_model(table)
