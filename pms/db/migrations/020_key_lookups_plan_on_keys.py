"""Migration 020: the kept-plan reads of tables that grow with the guests' traffic look up by
their keys whatever the planner's statistics say (PostgreSQL only).

Why: `python -m bench.inprocess profile --requests 3000` showed the database CPU of a
profile create growing with every round (0.9, 1.5, 2.1 ms) while the hand-written floor's stayed
at 0.48 ms. `auto_explain` showed why: `pms_profile_refs` and `pms_claim_idempotency_key` ran a
Seq Scan over every profile and every Idempotency-Key record. Their plans are generic and kept
per server connection (migration 015); they were made while the statistics described small
tables, and a kept plan is not made again until the next ANALYZE of the table (autovacuum's,
which the development machine runs without) or the next connection (the pool recycles them
after 5 minutes). On a table that grew meanwhile (a busy day, a bulk import of guest profiles,
a database with autovacuum off) every create then read the whole table.

What changes:
- `pms_profile_refs` reads the profile by its email, then (no match) by its external reference:
  two lookups by the full key of a unique index each. The single read with
  `email_normalized = e OR external_ref = r` could only be planned as a BitmapOr of the two
  indexes, which the planner traded for a scan of the tenant's whole `(env_id, last_name)`
  index once seq scans were off. Same arguments, same columns, same answer (the email's
  profile first).
- The functions that read the tables growing with every guest, stay and posting carry
  `enable_seqscan = off` as a function setting: a lookup by a key is an index probe even when
  the statistics say the table has a page or two (on such a table a sequential scan is the
  cheaper plan, and the kept plan would outlive the table's growth). They are the two above,
  `pms_folio_state` (folios, charges and payments; `auto_explain` showed it scanning
  `folio_charge` three times per check-out: `python -m bench.inprocess check-out
  --rooms-per-type 300` database CPU 1.73-1.92 ms per check-out, growing, now 1.57-1.60),
  `pms_lock_guest_folios` (folios) and `pms_pick_room` (room stays). A function's SET clause
  holds only while it runs: no session state, PgBouncer-safe. A test fails for a `pms_*`
  function that reads tables and lacks the setting.
- Left as they are: the booking's `pms_take_nights` and `pms_booking_refs`, which read tables
  sized by the hotel's configuration (rooms, calendar, rates, restrictions; the property row);
  with the setting their tiny tables were read through indexes and a booking's database CPU
  rose 3-4%. And the `pms_write_*` journal INSERTs, which read nothing.
"""

import importlib

import peewee as pw
from peewee_migrate import Migrator

# the functions that read tables growing with the traffic, besides pms_profile_refs (replaced)
KEY_LOOKUPS = (
    "pms_claim_idempotency_key(uuid, text, timestamptz)",
    "pms_folio_state(uuid, uuid, uuid, uuid, boolean, text, boolean)",
    "pms_lock_guest_folios(uuid, uuid)",
    "pms_pick_room(uuid, uuid, uuid, uuid, date, date, text[], boolean)",
)

REFS_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_profile_refs(in_env uuid, in_property uuid, in_email text,
                                            in_ref text)
RETURNS TABLE (
    property_found boolean,
    pr_id uuid,
    pr_created_at timestamp with time zone,
    pr_updated_at timestamp with time zone,
    pr_env_id uuid,
    pr_version integer,
    pr_kind character varying,
    pr_first_name character varying,
    pr_last_name character varying,
    pr_company_name character varying,
    pr_email character varying,
    pr_email_normalized character varying,
    pr_phone character varying,
    pr_external_ref character varying,
    pr_language character varying,
    pr_address jsonb,
    pr_preferences jsonb,
    pr_loyalty_number character varying,
    pr_origin_property_id uuid)
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
    SELECT EXISTS (SELECT 1 FROM property p WHERE p.env_id = in_env AND p.id = in_property),
           hit.id, hit.created_at, hit.updated_at, hit.env_id, hit.version, hit.kind,
           hit.first_name, hit.last_name, hit.company_name, hit.email, hit.email_normalized,
           hit.phone, hit.external_ref, hit.language, hit.address, hit.preferences,
           hit.loyalty_number, hit.origin_property_id;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(REFS_FUNCTION)
        for signature in KEY_LOOKUPS:
            migrator.sql(f"ALTER FUNCTION {signature} SET enable_seqscan = off")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        before = importlib.import_module("pms.db.migrations.014_profile_refs_function")
        migrator.sql(before.REFS_FUNCTION)
        migrator.sql("ALTER FUNCTION pms_profile_refs(uuid, uuid, text, text) "
                     "SET plan_cache_mode = force_generic_plan")
        for signature in KEY_LOOKUPS:
            migrator.sql(f"ALTER FUNCTION {signature} RESET enable_seqscan")
