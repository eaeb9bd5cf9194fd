"""Migration 014: `pms_profile_refs`, the profile create's one read (is the property there, and
the profile with the body's email first, else its external reference) as a PL/pgSQL function
(PostgreSQL; SQLite keeps the inline statement).

Why: measured per round trip with `log_statement_stats`, this read was most of the
database CPU of a profile create's first round trip (about 0.3 of 0.5 ms), most of it parsing
and planning (planning 0.15 ms, running 0.04 ms). A PL/pgSQL function keeps its plan per server
connection, which PgBouncer's transaction mode cannot take away (SQL `PREPARE` it can). It runs
with the caller's rights, under row-level security.

Columns: `property_found`, then the profile's columns as pms.models.Profile lists them (a test
compares them, so a column added to `profile` fails it until a migration replaces this).
"""

import peewee as pw
from peewee_migrate import Migrator

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
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    RETURN QUERY
    SELECT EXISTS (SELECT 1 FROM property p WHERE p.env_id = in_env AND p.id = in_property),
           x.id, x.created_at, x.updated_at, x.env_id, x.version, x.kind, x.first_name,
           x.last_name, x.company_name, x.email, x.email_normalized, x.phone, x.external_ref,
           x.language, x.address, x.preferences, x.loyalty_number, x.origin_property_id
    FROM (SELECT 1 AS one) AS o
    LEFT JOIN (
        SELECT * FROM profile f
        WHERE f.env_id = in_env AND (f.email_normalized = in_email OR f.external_ref = in_ref)
        ORDER BY CASE WHEN f.email_normalized = in_email THEN 0 ELSE 1 END
        LIMIT 1) AS x ON true;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(REFS_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_profile_refs(uuid, uuid, text, text)")
