"""Migration 011: `pms_claim_idempotency_key`, the Idempotency-Key claim that rides in a
request transaction's first round trip (PostgreSQL; SQLite keeps the general path).

One-transaction routes (pms.api.idempotency.IN_TRANSACTION_ROUTES) used to claim their key in a
round trip of its own before the use case's first statement. The claim now goes out in front of
that statement, in the same message (`BEGIN; SELECT set_config(...); SELECT
pms_claim_idempotency_key(...); <first statement>`), and its result is never read: the function
returns nothing when the key is this transaction's, and raises when it is not, which aborts the
message before the use case's statement runs:

- SQLSTATE `PMI01`: another live transaction holds the key (its transaction-level advisory lock,
  taken without waiting): 409 `idempotency_key_in_use`;
- SQLSTATE `PMI02`: the key has a live record: the request goes the general way (replay, 422
  mismatch, 409 in use, abandoned-claim recovery);
- an expired record is deleted and the key is claimed (as the general path treats it as absent).

A plain function call keeps nothing on the connection (PgBouncer transaction pooling): the lock
is transaction-level and the function runs with the caller's rights, under row-level security.
"""

import peewee as pw
from peewee_migrate import Migrator

CLAIM_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_claim_idempotency_key(p_env uuid, p_key text, p_now timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    found_id uuid;
    found_expires timestamptz;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended(p_env::text || ':' || p_key, 0)) THEN
        RAISE EXCEPTION 'the Idempotency-Key is in use by another request'
            USING ERRCODE = 'PMI01';
    END IF;
    SELECT id, expires_at INTO found_id, found_expires
    FROM idempotency_record WHERE env_id = p_env AND key = p_key;
    IF found_id IS NULL THEN
        RETURN;
    END IF;
    IF found_expires <= p_now THEN
        DELETE FROM idempotency_record WHERE env_id = p_env AND id = found_id;
        RETURN;
    END IF;
    RAISE EXCEPTION 'the Idempotency-Key has a record' USING ERRCODE = 'PMI02';
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(CLAIM_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_claim_idempotency_key(uuid, text, timestamptz)")
