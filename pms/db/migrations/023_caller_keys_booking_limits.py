"""Migration 023: Idempotency-Keys belong to their caller, and a property bounds what
one guest session may book.

- `idempotency_record.key` holds the caller's digest (of the token's `sub` and `holder_id`)
  before the client's key (pms.api.idempotency.caller_key): up to 33 + 255 characters, so the
  column grows to 300 (PostgreSQL; SQLite does not enforce a varchar's length). The unique index
  stays (env_id, key): the key it indexes now names its caller.
- `property.max_guest_bookings` (default 5) and `property.booking_horizon_days` (default 550).
- `pms_booking_refs` (migration 013) returns the property's columns as the model lists them, so
  it is replaced with the two new ones after `business_date` (its return type changes: dropped
  and created again, with the generic-plan setting migration 015 gave it).
"""

import peewee as pw
from peewee_migrate import Migrator

REFS_SIGNATURE = "pms_booking_refs(uuid, uuid, uuid, uuid, date, date)"

REFS_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_booking_refs(in_env uuid, in_property uuid, in_room_type uuid,
                                            in_rate_plan uuid, in_arrival date, in_departure date)
RETURNS TABLE (
    p_id uuid,
    p_created_at timestamp with time zone,
    p_updated_at timestamp with time zone,
    p_env_id uuid,
    p_version integer,
    p_code character varying,
    p_name character varying,
    p_timezone character varying,
    p_currency_code character varying,
    p_languages jsonb,
    p_display_address jsonb,
    p_contacts jsonb,
    p_business_date date,
    p_max_guest_bookings integer,
    p_booking_horizon_days integer,
    rt_id uuid,
    rt_created_at timestamp with time zone,
    rt_updated_at timestamp with time zone,
    rt_env_id uuid,
    rt_version integer,
    rt_property_id uuid,
    rt_code character varying,
    rt_name character varying,
    rt_description text,
    rt_max_occupancy integer,
    rt_sort_order integer,
    rp_id uuid,
    rp_created_at timestamp with time zone,
    rp_updated_at timestamp with time zone,
    rp_env_id uuid,
    rp_version integer,
    rp_property_id uuid,
    rp_code character varying,
    rp_name character varying,
    rp_description text,
    rp_negotiated boolean,
    rp_currency character varying,
    rp_cancellation_policy jsonb,
    rp_no_show_policy jsonb,
    rp_package_codes jsonb,
    rp_active boolean,
    stay_rates json,
    stay_restrictions json)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    RETURN QUERY
    SELECT p.id, p.created_at, p.updated_at, p.env_id, p.version,
           p.code, p.name, p.timezone, p.currency_code, p.languages,
           p.display_address, p.contacts, p.business_date, p.max_guest_bookings,
           p.booking_horizon_days, rt.id, rt.created_at,
           rt.updated_at, rt.env_id, rt.version, rt.property_id, rt.code,
           rt.name, rt.description, rt.max_occupancy, rt.sort_order, rp.id,
           rp.created_at, rp.updated_at, rp.env_id, rp.version, rp.property_id,
           rp.code, rp.name, rp.description, rp.negotiated, rp.currency,
           rp.cancellation_policy, rp.no_show_policy, rp.package_codes, rp.active,
           (SELECT json_agg(json_build_array(rs.date, rs.amount::text)) FROM rate_schedule rs
            WHERE rs.env_id = in_env AND rs.property_id = p.id AND rs.rate_plan_id = rp.id
              AND rs.room_type_id = rt.id AND rs.date >= in_arrival AND rs.date < in_departure),
           (SELECT json_agg(json_build_array(r.date, r.closed, r.closed_to_arrival,
                                             r.closed_to_departure, r.min_los, r.max_los))
            FROM restriction r
            WHERE r.env_id = in_env AND r.property_id = p.id AND r.date >= in_arrival
              AND r.date <= in_departure AND (r.rate_plan_id IS NULL OR r.rate_plan_id = rp.id)
              AND (r.room_type_id IS NULL OR r.room_type_id = rt.id))
    FROM property p
    LEFT JOIN room_type rt ON rt.env_id = in_env AND rt.id = in_room_type AND rt.property_id = p.id
    LEFT JOIN rate_plan rp ON rp.env_id = in_env AND rp.id = in_rate_plan AND rp.property_id = p.id
    WHERE p.env_id = in_env AND p.id = in_property;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields(
        'property',

        # a server default too: rows inserted by statements that name no bound keep working
        max_guest_bookings=pw.IntegerField(default=5, constraints=[pw.SQL("DEFAULT 5")]),
        booking_horizon_days=pw.IntegerField(default=550, constraints=[pw.SQL("DEFAULT 550")]))
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("ALTER TABLE idempotency_record ALTER COLUMN key TYPE varchar(300)")
        migrator.sql(f"DROP FUNCTION IF EXISTS {REFS_SIGNATURE}")
        migrator.sql(REFS_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(f"DROP FUNCTION IF EXISTS {REFS_SIGNATURE}")
    migrator.remove_fields('property', 'max_guest_bookings', 'booking_horizon_days')
    if isinstance(database, pw.PostgresqlDatabase):
        import importlib

        migrator.sql(importlib.import_module(
            "pms.db.migrations.013_booking_refs_function").REFS_FUNCTION)
        migrator.sql(f"ALTER FUNCTION {REFS_SIGNATURE} SET plan_cache_mode = force_generic_plan")
        migrator.sql("DELETE FROM idempotency_record WHERE length(key) > 255")
        migrator.sql("ALTER TABLE idempotency_record ALTER COLUMN key TYPE varchar(255)")
