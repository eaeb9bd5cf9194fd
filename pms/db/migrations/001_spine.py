"""Peewee migrations -- 001_spine.py.

Some examples (model - class or model name)::

    > Model = migrator.orm['table_name']            # Return model in current state by name
    > Model = migrator.ModelClass                   # Return model in current state by name

    > migrator.sql(sql)                             # Run custom SQL
    > migrator.run(func, *args, **kwargs)           # Run python function with the given args
    > migrator.create_model(Model)                  # Create a model (could be used as decorator)
    > migrator.remove_model(model, cascade=True)    # Remove a model
    > migrator.add_fields(model, **fields)          # Add fields (allow_not_null=True skips default)
    > migrator.change_fields(model, **fields)       # Change fields
    > migrator.remove_fields(model, *field_names, cascade=True)
    > migrator.rename_field(model, old_field_name, new_field_name)
    > migrator.rename_table(model, new_table_name)
    > migrator.add_index(model, *col_names, unique=False)
    > migrator.add_not_null(model, *field_names)
    > migrator.add_default(model, field_name, default)
    > migrator.add_constraint(model, name, sql)
    > migrator.drop_index(model, *col_names)
    > migrator.drop_not_null(model, *field_names)
    > migrator.drop_constraints(model, *constraints)

"""

from contextlib import suppress

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


with suppress(ImportError):
    import playhouse.postgres_ext as pw_pext


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    """Write your migrations here."""
    
    @migrator.create_model
    class AuditEntry(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        action = pw.CharField(max_length=120)
        target_type = pw.CharField(max_length=60)
        target_id = pw.CharField(max_length=64)
        property_id = pw.UUIDField(null=True)
        actor_sub = pw.CharField(max_length=255)
        actor_kind = pw.CharField(max_length=32)
        request_id = pw.CharField(max_length=128, null=True)
        before = pmsf.JsonField(null=True)
        after = pmsf.JsonField(null=True)
        reason = pw.TextField(null=True)
        pushed_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "audit_entry"
            indexes = [(('env_id', 'target_id', 'created_at'), False), (('env_id', 'created_at'), False)]

    @migrator.create_model
    class IdempotencyRecord(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        key = pw.CharField(max_length=255)
        fingerprint = pw.CharField(max_length=128)
        state = pw.CharField(default='running', max_length=16)
        response_status = pw.IntegerField(null=True)
        response_body = pw.TextField(null=True)
        response_headers = pmsf.JsonField(null=True)
        expires_at = pmsf.UtcDateTimeField()

        class Meta:
            table_name = "idempotency_record"
            indexes = [(('env_id', 'key'), True), (('env_id', 'expires_at'), False)]

    @migrator.create_model
    class Property(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        timezone = pw.CharField(max_length=64)
        currency_code = pw.CharField(max_length=3)
        languages = pmsf.JsonField()
        display_address = pmsf.JsonField(null=True)
        contacts = pmsf.JsonField(null=True)
        business_date = pw.DateField(null=True)

        class Meta:
            table_name = "property"
            indexes = [(('env_id', 'code'), True)]

    @migrator.create_model
    class Item(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        category = pw.CharField(max_length=16)
        price = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)

        class Meta:
            table_name = "item"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class Job(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        kind = pw.CharField(max_length=60)
        status = pw.CharField(default='QUEUED', max_length=16)
        property_id = pw.UUIDField(null=True)
        input = pmsf.JsonField(null=True)
        result = pmsf.JsonField(null=True)
        error = pw.TextField(null=True)
        started_at = pmsf.UtcDateTimeField(null=True)
        finished_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "job"
            indexes = [(('env_id', 'created_at'), False)]

    @migrator.create_model
    class OutboxEvent(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        type = pw.CharField(max_length=120)
        source = pw.CharField(default='hotel-pms', max_length=60)
        subject = pw.CharField(max_length=64)
        aggregate_type = pw.CharField(max_length=60)
        aggregate_version = pw.IntegerField()
        property_id = pw.UUIDField(null=True)
        idempotency_key = pw.CharField(max_length=255)
        time = pmsf.UtcDateTimeField()
        data = pmsf.JsonField()
        traceparent = pw.CharField(max_length=64, null=True)
        request_id = pw.CharField(max_length=128, null=True)
        published_at = pmsf.UtcDateTimeField(null=True)
        attempts = pw.IntegerField(default=0)
        next_attempt_at = pmsf.UtcDateTimeField()
        last_error = pw.TextField(null=True)

        class Meta:
            table_name = "outbox_event"
            indexes = [(('env_id', 'created_at'), False), (('env_id', 'subject', 'aggregate_version'), False)]

    @migrator.create_model
    class Package(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        description = pw.TextField(null=True)
        price = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)
        calculation = pw.CharField(default='PER_STAY', max_length=32)
        category = pw.CharField(default='other', max_length=16)

        class Meta:
            table_name = "package"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class Profile(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        kind = pw.CharField(default='GUEST', max_length=16)
        first_name = pw.CharField(max_length=120, null=True)
        last_name = pw.CharField(max_length=120, null=True)
        company_name = pw.CharField(max_length=200, null=True)
        email = pw.CharField(max_length=254, null=True)
        email_normalized = pw.CharField(max_length=254, null=True)
        phone = pw.CharField(max_length=40, null=True)
        external_ref = pw.CharField(max_length=128, null=True)
        language = pw.CharField(max_length=16, null=True)
        address = pmsf.JsonField(null=True)
        preferences = pmsf.JsonField()
        loyalty_number = pw.CharField(max_length=64, null=True)
        origin_property_id = pw.UUIDField(null=True)

        class Meta:
            table_name = "profile"
            indexes = [(('env_id', 'email_normalized'), True), (('env_id', 'external_ref'), True), (('env_id', 'last_name'), False)]

    @migrator.create_model
    class RatePlan(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        description = pw.TextField(null=True)
        negotiated = pw.BooleanField(default=False)
        currency = pw.CharField(max_length=3)
        cancellation_policy = pmsf.JsonField()
        no_show_policy = pmsf.JsonField()
        package_codes = pmsf.JsonField()
        active = pw.BooleanField(default=True)

        class Meta:
            table_name = "rate_plan"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class RoomType(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        description = pw.TextField(null=True)
        max_occupancy = pw.IntegerField(default=2)
        sort_order = pw.IntegerField(default=0)

        class Meta:
            table_name = "room_type"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class Room(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        room_type = pw.ForeignKeyField(index=False, column_name='room_type_id', field='id', model=migrator.orm['room_type'], on_delete='RESTRICT')
        room_number = pw.CharField(max_length=16)
        floor = pw.CharField(max_length=16, null=True)
        status = pw.CharField(default='VACANT', max_length=16)
        hk_status = pw.CharField(default='CLEAN', max_length=16)

        class Meta:
            table_name = "room"
            indexes = [(('env_id', 'property', 'room_number'), True), (('env_id', 'room_type'), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Write your rollback migrations here."""
    
    migrator.remove_model('room')

    migrator.remove_model('room_type')

    migrator.remove_model('rate_plan')

    migrator.remove_model('profile')

    migrator.remove_model('package')

    migrator.remove_model('outbox_event')

    migrator.remove_model('job')

    migrator.remove_model('item')

    migrator.remove_model('property')

    migrator.remove_model('idempotency_record')

    migrator.remove_model('audit_entry')
