"""Migration 030: the stored functions that returned or took a table's columns one by
one return or take the table's row instead, so adding a column to a table needs no change to any
function (PostgreSQL only).

- `pms_booking_refs` returns `(p_row property, rt_row room_type, rp_row rate_plan, stay_rates,
  stay_restrictions)` and `pms_profile_refs` `(property_found, pr_row profile)`: whole rows of the
  table's row type (an outer join that finds nothing: a NULL row). The caller names the columns
  it reads, as its model lists them (`SELECT (b.p_row).id, (b.p_row).code, ... FROM pms_booking_refs(...)
  b`, built from the model's fields): a column added to the table and the model is read with no
  function replaced, and a column added to the table alone (not yet in the model) is not read.
- `pms_folio_state` returns the folio as `f_row folio` (its row type) before the reservation and
  property fields the folio rules read and the state columns (lines as json arrays of the fields
  the renderers read, as before). Same arguments, same locks, same snapshots (migration 016).
- `pms_write_audit_entry`, `pms_write_outbox_event` and `pms_write_idempotency_record` take the
  row as one jsonb document (`{"column": value, ...}`, the model's columns) and insert
  `jsonb_populate_record(NULL::<table>, doc)`: a column the document does not name is NULL, as
  the per-column parameters' omitted column was (these tables have no server-side defaults;
  a column added with a default would need the document to name it, which the model does).
  `TenantModel.insert_statement` and compiled saves send the document
  (pms.db.base._WritePlans).

Every function keeps its settings: the generic plan (migration 015) and, for the ones reading
tables growing with the traffic, `enable_seqscan = off` (migration 020); a test checks both.
tests/db/test_row_typed_functions.py checks that no pms_* function names a table's columns in
its result or arguments and that adding a column to every tenant table changes nothing.
"""

import importlib

import peewee as pw
from peewee_migrate import Migrator

REFS_SIGNATURE = "pms_booking_refs(uuid, uuid, uuid, uuid, date, date)"
PROFILE_SIGNATURE = "pms_profile_refs(uuid, uuid, text, text)"
STATE_SIGNATURE = "pms_folio_state(uuid, uuid, uuid, uuid, boolean, text, boolean)"
WRITE_TABLES = ("audit_entry", "outbox_event", "idempotency_record")

BOOKING_REFS = """
CREATE FUNCTION pms_booking_refs(in_env uuid, in_property uuid, in_room_type uuid,
                                 in_rate_plan uuid, in_arrival date, in_departure date)
RETURNS TABLE (p_row property, rt_row room_type, rp_row rate_plan, stay_rates json,
               stay_restrictions json)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    RETURN QUERY
    SELECT p, rt, rp,
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

PROFILE_REFS = """
CREATE FUNCTION pms_profile_refs(in_env uuid, in_property uuid, in_email text, in_ref text)
RETURNS TABLE (property_found boolean, pr_row profile)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off AS $fn$
DECLARE
    hit profile;  -- the table's row type
BEGIN
    IF in_email IS NOT NULL THEN
        SELECT * INTO hit FROM profile f
         WHERE f.env_id = in_env AND f.email_normalized = in_email;
    END IF;
    IF hit.id IS NULL AND in_ref IS NOT NULL THEN
        SELECT * INTO hit FROM profile f
         WHERE f.env_id = in_env AND f.external_ref = in_ref;
    END IF;
    RETURN QUERY
    SELECT EXISTS (SELECT 1 FROM property p WHERE p.env_id = in_env AND p.id = in_property), hit;
END
$fn$
"""


def _folio_state() -> str:
    before = importlib.import_module("pms.db.migrations.016_folio_state_function")
    sql = before.STATE_FUNCTION
    folio_columns = ("f.id, f.created_at, f.updated_at, f.env_id, f.version, f.reservation_id,\n"
                     "               f.property_id, f.room_number, f.status, f.folio_type,"
                     " f.currency, f.closed_at,")
    assert sql.count(folio_columns) == 2, "migration 016's read changed"
    sql = sql.replace(folio_columns, "f,")
    head, rest = sql.split("RETURNS TABLE (", 1)
    _, tail = rest.split("    p_timezone character varying,", 1)
    sql = head + "RETURNS TABLE (\n    f_row folio,\n    p_timezone character varying," + tail
    return sql.replace("CREATE OR REPLACE FUNCTION", "CREATE FUNCTION")


def _write_function(table: str) -> str:
    return f"""
CREATE FUNCTION pms_write_{table}(in_row jsonb)
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    INSERT INTO {table} SELECT * FROM jsonb_populate_record(NULL::{table}, in_row);
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    migrator.sql(f"DROP FUNCTION IF EXISTS {REFS_SIGNATURE}")
    migrator.sql(BOOKING_REFS)
    migrator.sql(f"DROP FUNCTION IF EXISTS {PROFILE_SIGNATURE}")
    migrator.sql(PROFILE_REFS)
    migrator.sql(f"DROP FUNCTION IF EXISTS {STATE_SIGNATURE}")
    migrator.sql(_folio_state())
    migrator.sql(f"ALTER FUNCTION {STATE_SIGNATURE} SET enable_seqscan = off")  # as 016's
    for table in WRITE_TABLES:
        migrator.sql(f"DROP FUNCTION IF EXISTS pms_write_{table}")
        migrator.sql(_write_function(table))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    m027 = importlib.import_module("pms.db.migrations.027_guest_journeys")
    m016 = importlib.import_module("pms.db.migrations.016_folio_state_function")
    m017 = importlib.import_module("pms.db.migrations.017_journal_write_functions")
    m020 = importlib.import_module("pms.db.migrations.020_key_lookups_plan_on_keys")
    m027._replace_refs(migrator, True)  # (drops 030's; 027's, with the generic-plan setting)
    migrator.sql(f"DROP FUNCTION IF EXISTS {PROFILE_SIGNATURE}")
    migrator.sql(m020.REFS_FUNCTION)
    migrator.sql(f"ALTER FUNCTION {PROFILE_SIGNATURE} SET plan_cache_mode = force_generic_plan")
    migrator.sql(f"DROP FUNCTION IF EXISTS {STATE_SIGNATURE}")
    migrator.sql(m016.STATE_FUNCTION)
    migrator.sql(f"ALTER FUNCTION {STATE_SIGNATURE} SET enable_seqscan = off")
    for table in WRITE_TABLES:
        migrator.sql(f"DROP FUNCTION IF EXISTS pms_write_{table}(jsonb)")
    for sql in m017.FUNCTIONS:
        migrator.sql(sql)
