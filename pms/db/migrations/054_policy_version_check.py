"""Migration 054: `pms_policy_version_is`, the policy gate's check that rides the request's first
statement (PostgreSQL; SQLite reads the version with its own statement, in process).

The route gate decides with the env's policies as its process cached them, at version V, and
has `SELECT pms_policy_version_is(V)` go out in front of the request's first statement, in the
same message (pms.db.database `check_first`). The function returns nothing while the env's
`policy_version` row still says V (0 when the env has none), and raises SQLSTATE `PMC01`
otherwise, which aborts the message before the request's statement runs: the gate re-reads the
policies, decides again, and the statement goes out a second time (or the request is refused).

A plain function call with the caller's rights, under row-level security (the env is the
transaction's `app.env_id`): nothing stays on the connection (PgBouncer transaction pooling).
"""

import peewee as pw
from peewee_migrate import Migrator

CHECK_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_policy_version_is(p_version integer)
RETURNS void LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off AS $fn$
DECLARE
    found integer;
BEGIN
    SELECT version INTO found FROM policy_version
    WHERE env_id = nullif(current_setting('app.env_id', true), '')::uuid
      AND id = nullif(current_setting('app.env_id', true), '')::uuid;
    IF coalesce(found, 0) <> p_version THEN
        -- (no format placeholders: the migrator's text goes through psycopg2's interpolation)
        RAISE EXCEPTION 'the env''s policies moved on from the cached version'
            USING ERRCODE = 'PMC01';
    END IF;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(CHECK_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_policy_version_is(integer)")
