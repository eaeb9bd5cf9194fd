"""Peewee migrations -- 003_reservations.py.

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
from decimal import Decimal

import peewee as pw
from peewee_migrate import Migrator

from pms.db.database import is_postgres

from pms.db import fields as pmsf


with suppress(ImportError):
    import playhouse.postgres_ext as pw_pext


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    """Write your migrations here."""
    
    @migrator.create_model
    class Reservation(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        room_type = pw.ForeignKeyField(index=False, column_name='room_type_id', field='id', model=migrator.orm['room_type'], on_delete='RESTRICT')
        rate_plan = pw.ForeignKeyField(index=False, column_name='rate_plan_id', field='id', model=migrator.orm['rate_plan'], on_delete='RESTRICT')
        guest_profile = pw.ForeignKeyField(index=False, column_name='guest_profile_id', field='id', model=migrator.orm['profile'], null=True, on_delete='RESTRICT')
        confirmation_number = pw.CharField(max_length=64)
        status = pw.CharField(max_length=16)
        arrival_date = pw.DateField()
        departure_date = pw.DateField()
        adults = pw.IntegerField(default=1)
        children = pw.IntegerField(default=0)
        source = pw.CharField(default='DIRECT', max_length=16)
        channel = pw.CharField(default='WEB', max_length=16)
        guest_first_name = pw.CharField(max_length=120, null=True)
        guest_last_name = pw.CharField(max_length=120, null=True)
        guest_last_name_normalized = pw.CharField(max_length=120, null=True)
        room = pw.ForeignKeyField(index=False, column_name='room_id', field='id', model=migrator.orm['room'], null=True, on_delete='RESTRICT')
        currency = pw.CharField(max_length=3)
        room_total = pmsf.MoneyField(default=Decimal('0'))
        packages_total = pmsf.MoneyField(default=Decimal('0'))
        discount_total = pmsf.MoneyField(default=Decimal('0'))
        total_amount = pmsf.MoneyField(default=Decimal('0'))
        nightly_prices = pmsf.JsonField()
        promo_code = pw.CharField(max_length=64, null=True)
        registration = pmsf.JsonField(null=True)
        pre_checked_in_at = pmsf.UtcDateTimeField(null=True)
        cancellation_fee = pmsf.MoneyField(null=True)
        no_show_fee = pmsf.MoneyField(null=True)
        cancelled_at = pmsf.UtcDateTimeField(null=True)
        checked_in_at = pmsf.UtcDateTimeField(null=True)
        checked_out_at = pmsf.UtcDateTimeField(null=True)
        checked_in_business_date = pw.DateField(null=True)
        checked_out_business_date = pw.DateField(null=True)
        split_from = pw.UUIDField(null=True)
        notes = pw.TextField(null=True)

        class Meta:
            table_name = "reservation"
            indexes = [(('env_id', 'confirmation_number'), True), (('env_id', 'property', 'arrival_date'), False), (('env_id', 'property', 'status'), False), (('env_id', 'guest_profile'), False), (('env_id', 'guest_last_name_normalized'), False), (('env_id', 'created_at'), False)]

    @migrator.create_model
    class Folio(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='RESTRICT')
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        room_number = pw.CharField(max_length=16, null=True)
        status = pw.CharField(max_length=16)
        folio_type = pw.CharField(default='GUEST', max_length=16)
        currency = pw.CharField(max_length=3)
        closed_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "folio"
            indexes = [(('env_id', 'reservation'), False), (('env_id', 'property', 'room_number', 'status'), False)]

    @migrator.create_model
    class FolioCharge(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        folio = pw.ForeignKeyField(index=False, column_name='folio_id', field='id', model=migrator.orm['folio'], on_delete='RESTRICT')
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='RESTRICT')
        category = pw.CharField(max_length=16)
        description = pw.CharField(max_length=200)
        amount = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)
        quantity = pw.IntegerField(default=1)
        business_date = pw.DateField()
        night = pw.DateField(null=True)
        kind = pw.CharField(default='charge', max_length=16)

        class Meta:
            table_name = "folio_charge"
            indexes = [(('env_id', 'folio', 'created_at'), False), (('env_id', 'reservation', 'kind', 'night'), False)]

    @migrator.create_model
    class FolioPayment(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        folio = pw.ForeignKeyField(index=False, column_name='folio_id', field='id', model=migrator.orm['folio'], on_delete='RESTRICT')
        amount = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)
        method = pw.CharField(max_length=32)
        payment_method_id = pw.CharField(max_length=128, null=True)
        status = pw.CharField(default='PENDING', max_length=16)

        class Meta:
            table_name = "folio_payment"
            indexes = [(('env_id', 'folio', 'created_at'), False)]

    @migrator.create_model
    class ReservationComment(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='CASCADE')
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        text = pw.TextField()
        author_sub = pw.CharField(max_length=255)
        internal = pw.BooleanField(default=True)

        class Meta:
            table_name = "reservation_comment"
            indexes = [(('env_id', 'reservation', 'created_at'), False)]

    @migrator.create_model
    class ReservationMessage(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='CASCADE')
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        direction = pw.CharField(max_length=16)
        status = pw.CharField(max_length=16)
        channel = pw.CharField(default='EMAIL', max_length=16)
        subject = pw.CharField(max_length=200, null=True)
        body = pw.TextField()
        sent_at = pmsf.UtcDateTimeField(null=True)
        attempts = pw.IntegerField(default=0)
        last_error = pw.TextField(null=True)

        class Meta:
            table_name = "reservation_message"
            indexes = [(('env_id', 'reservation', 'created_at'), False), (('env_id', 'status'), False)]

    @migrator.create_model
    class RoomStay(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='CASCADE')
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        room = pw.ForeignKeyField(index=False, column_name='room_id', field='id', model=migrator.orm['room'], on_delete='RESTRICT')
        start_date = pw.DateField()
        end_date = pw.DateField()

        class Meta:
            table_name = "room_stay"
            indexes = [(('env_id', 'room', 'start_date'), False), (('env_id', 'reservation'), False)]

    @migrator.create_model
    class ServiceRequest(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='CASCADE')
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        kind = pw.CharField(max_length=32)
        description = pw.TextField(null=True)
        status = pw.CharField(max_length=16)
        due_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "service_request"
            indexes = [(('env_id', 'reservation', 'created_at'), False)]

    is_pg = is_postgres(database.obj if hasattr(database, "obj") else database)
    # A room charge is posted once per stay and night (both backends support partial indexes).
    migrator.sql(
        "CREATE UNIQUE INDEX folio_charge_room_night_once ON folio_charge "
        "(env_id, reservation_id, night) WHERE kind = 'room'")
    # At most one OPEN guest folio per reservation (SPEC rule 5 keeps it at exactly one while
    # the guest is in house).
    migrator.sql(
        "CREATE UNIQUE INDEX folio_one_open_guest ON folio (env_id, reservation_id) "
        "WHERE status = 'OPEN' AND folio_type = 'GUEST'")
    if is_pg:
        # Two stays can never hold one physical room on overlapping nights. btree_gist is a
        # trusted extension (PostgreSQL 13+), so the database owner may create it.
        migrator.sql("CREATE EXTENSION IF NOT EXISTS btree_gist")
        migrator.sql(
            "ALTER TABLE room_stay ADD CONSTRAINT room_stay_no_overlap EXCLUDE USING gist "
            "(env_id WITH =, room_id WITH =, daterange(start_date, end_date) WITH &&)")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Drop the reservation and folio tables."""
    for name in ("folio_payment", "folio_charge", "folio", "service_request",
                 "reservation_message", "reservation_comment", "room_stay", "reservation"):
        migrator.remove_model(name)
