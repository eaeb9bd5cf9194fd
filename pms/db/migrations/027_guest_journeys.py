"""Migration 027: digital keys, kiosk config (one per property), feedback (one per
reservation), guest payment-method references, and the property's check_out_time."""

import importlib

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf

REFS = "pms_booking_refs(uuid, uuid, uuid, uuid, date, date)"


def _refs_function(with_check_out_time: bool) -> str:
    """Migration 023's `pms_booking_refs` (013's with two more property columns), which
    returns the property's columns in the model's order, with check_out_time after
    business_date (or without it, for the rollback)."""
    text = importlib.import_module("pms.db.migrations.023_caller_keys_booking_limits").REFS_FUNCTION
    if not with_check_out_time:
        return text
    for old, new in (("    p_business_date date,\n",
                      "    p_business_date date,\n    p_check_out_time character varying,\n"),
                     ("p.business_date, p.max_guest_bookings,",
                      "p.business_date, p.check_out_time, p.max_guest_bookings,")):
        if text.count(old) != 1:
            raise RuntimeError(f"pms_booking_refs changed: cannot place {old!r}")
        text = text.replace(old, new)
    return text


def _replace_refs(migrator: Migrator, with_check_out_time: bool) -> None:
    # the result type changes: drop, create, and keep migration 015's generic plans
    migrator.sql(f"DROP FUNCTION IF EXISTS {REFS}")
    migrator.sql(_refs_function(with_check_out_time))
    migrator.sql(f"ALTER FUNCTION {REFS} SET plan_cache_mode = force_generic_plan")


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    # the property's local check-out time "HH:MM" (NULL: 11:00), the model's last column: the
    # booking's pms_booking_refs, which returns the property's columns, returns it too
    migrator.add_fields('property', check_out_time=pw.CharField(max_length=5, null=True))
    if isinstance(database, pw.PostgresqlDatabase):
        _replace_refs(migrator, True)

    @migrator.create_model
    class DigitalKey(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='CASCADE')
        room_id = pw.UUIDField()
        room_number = pw.CharField(max_length=16)
        key_type = pw.CharField(max_length=8)
        status = pw.CharField(max_length=16)
        valid_from = pmsf.UtcDateTimeField()
        valid_until = pmsf.UtcDateTimeField()
        issued_by = pw.CharField(max_length=200)
        override_reason = pw.TextField(null=True)
        lock_command = pw.CharField(max_length=16)
        lock_state = pw.CharField(max_length=16)
        lock_attempts = pw.IntegerField(default=0)
        lock_last_error = pw.TextField(null=True)
        lock_sent_at = pmsf.UtcDateTimeField(null=True)
        lock_confirmed_at = pmsf.UtcDateTimeField(null=True)
        credential_ref = pw.CharField(max_length=200, null=True)
        revoked_at = pmsf.UtcDateTimeField(null=True)
        revoke_reason = pw.CharField(max_length=24, null=True)
        revocation_path = pw.CharField(max_length=16, null=True)
        revocation_effective_by = pmsf.UtcDateTimeField(null=True)
        revocation_confirmed_at = pmsf.UtcDateTimeField(null=True)
        expired_at = pmsf.UtcDateTimeField(null=True)
        pair_id = pw.UUIDField(null=True)
        replaces_key_id = pw.UUIDField(null=True)

        class Meta:
            table_name = "digital_key"
            indexes = [(('env_id', 'reservation', 'status'), False), (('env_id', 'status', 'valid_until'), False), (('env_id', 'lock_state', 'updated_at'), False), (('env_id', 'credential_ref'), False)]

    @migrator.create_model
    class KioskConfig(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='CASCADE')
        enabled_modes = pmsf.JsonField()
        add_on_package_codes = pmsf.JsonField()
        lockdown = pw.BooleanField(default=False)
        max_keys_per_stay = pw.IntegerField(default=2)

        class Meta:
            table_name = "kiosk_config"
            indexes = [(('env_id', 'property'), True)]

    @migrator.create_model
    class Feedback(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        reservation = pw.ForeignKeyField(index=False, column_name='reservation_id', field='id', model=migrator.orm['reservation'], on_delete='CASCADE')
        rating = pw.SmallIntegerField()
        comment = pw.TextField(null=True)
        submitted_by = pw.CharField(max_length=200)

        class Meta:
            table_name = "feedback"
            indexes = [(('env_id', 'reservation'), True), (('env_id', 'property', 'created_at'), False)]

    @migrator.create_model
    class GuestPaymentMethod(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        profile = pw.ForeignKeyField(index=False, column_name='profile_id', field='id', model=migrator.orm['profile'], on_delete='CASCADE')
        payment_method_id = pw.CharField(max_length=255)
        brand = pw.CharField(max_length=32, null=True)
        last4 = pw.CharField(max_length=4, null=True)
        exp_month = pw.SmallIntegerField(null=True)
        exp_year = pw.SmallIntegerField(null=True)

        class Meta:
            table_name = "guest_payment_method"
            indexes = [(('env_id', 'profile', 'payment_method_id'), True)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('guest_payment_method')
    migrator.remove_model('feedback')
    migrator.remove_model('kiosk_config')
    migrator.remove_model('digital_key')
    if isinstance(database, pw.PostgresqlDatabase):
        _replace_refs(migrator, False)
    migrator.remove_fields('property', 'check_out_time')
