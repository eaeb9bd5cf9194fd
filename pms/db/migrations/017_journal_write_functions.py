"""Migration 017: the journal rows every write sends with its COMMIT (the audit entry, the outbox
event and the Idempotency-Key record) are inserted through PL/pgSQL functions (PostgreSQL only;
SQLite keeps its INSERTs).

Why: every change writes an audit row and an outbox row, and every keyed request an
Idempotency-Key record, each a wide INSERT that PostgreSQL parsed, analysed (row-level
security's WITH CHECK included) and planned again on every call. Called through a function, the
INSERT's plan is made once per server connection and kept, with no session state a pooler could
lose (SQL PREPARE is banned for that reason). Measured with pgbench on a migrated database
(one client, `synchronous_commit = off` so the disk does not hide the CPU, 4 alternating pairs of
4 s runs): BEGIN + audit INSERT + outbox INSERT + COMMIT ran at 1,695 / 1,725 / 3,505 / 2,192
transactions per second, the same rows through the two functions at 2,241 / 1,822 / 4,080 /
2,659.

Each function takes every column of its table, in the order of the model's fields
(`pms.models.platform`): `TenantModel.insert_statement` and compiled saves call it with the
row's values (a column the row does not hold is NULL, as the INSERT's omitted column was: these
tables have no server-side defaults). A test compares the parameters with the models, so a
column added to one of these tables fails it until a migration replaces the function. They run
with the caller's rights, under row-level security, and force their generic plan (migration
015).
"""

import peewee as pw
from peewee_migrate import Migrator

AUDIT_ENTRY_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_write_audit_entry(
    p_id uuid,
    p_created_at timestamptz,
    p_updated_at timestamptz,
    p_env_id uuid,
    p_action text,
    p_target_type text,
    p_target_id text,
    p_property_id uuid,
    p_actor_sub text,
    p_actor_kind text,
    p_request_id text,
    p_before jsonb,
    p_after jsonb,
    p_reason text,
    p_pushed_at timestamptz,
    p_lease_owner text,
    p_lease_until timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    INSERT INTO audit_entry ("id", "created_at", "updated_at", "env_id", "action", "target_type", "target_id", "property_id", "actor_sub", "actor_kind", "request_id", "before", "after", "reason", "pushed_at", "lease_owner", "lease_until")
    VALUES (p_id, p_created_at, p_updated_at, p_env_id, p_action, p_target_type, p_target_id, p_property_id, p_actor_sub, p_actor_kind, p_request_id, p_before, p_after, p_reason, p_pushed_at, p_lease_owner, p_lease_until);
END
$fn$
"""

OUTBOX_EVENT_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_write_outbox_event(
    p_id uuid,
    p_created_at timestamptz,
    p_updated_at timestamptz,
    p_env_id uuid,
    p_type text,
    p_source text,
    p_subject text,
    p_aggregate_type text,
    p_aggregate_version integer,
    p_property_id uuid,
    p_idempotency_key text,
    p_time timestamptz,
    p_data jsonb,
    p_traceparent text,
    p_request_id text,
    p_published_at timestamptz,
    p_attempts integer,
    p_next_attempt_at timestamptz,
    p_last_error text,
    p_partition integer,
    p_lease_owner text,
    p_lease_until timestamptz,
    p_parked_at timestamptz,
    p_dispatched_at timestamptz,
    p_dispatch_attempts integer,
    p_dispatch_next_at timestamptz)
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    INSERT INTO outbox_event ("id", "created_at", "updated_at", "env_id", "type", "source", "subject", "aggregate_type", "aggregate_version", "property_id", "idempotency_key", "time", "data", "traceparent", "request_id", "published_at", "attempts", "next_attempt_at", "last_error", "partition", "lease_owner", "lease_until", "parked_at", "dispatched_at", "dispatch_attempts", "dispatch_next_at")
    VALUES (p_id, p_created_at, p_updated_at, p_env_id, p_type, p_source, p_subject, p_aggregate_type, p_aggregate_version, p_property_id, p_idempotency_key, p_time, p_data, p_traceparent, p_request_id, p_published_at, p_attempts, p_next_attempt_at, p_last_error, p_partition, p_lease_owner, p_lease_until, p_parked_at, p_dispatched_at, p_dispatch_attempts, p_dispatch_next_at);
END
$fn$
"""

IDEMPOTENCY_RECORD_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_write_idempotency_record(
    p_id uuid,
    p_created_at timestamptz,
    p_updated_at timestamptz,
    p_env_id uuid,
    p_key text,
    p_fingerprint text,
    p_state text,
    p_response_status integer,
    p_response_body text,
    p_response_headers jsonb,
    p_expires_at timestamptz,
    p_request_id text)
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    INSERT INTO idempotency_record ("id", "created_at", "updated_at", "env_id", "key", "fingerprint", "state", "response_status", "response_body", "response_headers", "expires_at", "request_id")
    VALUES (p_id, p_created_at, p_updated_at, p_env_id, p_key, p_fingerprint, p_state, p_response_status, p_response_body, p_response_headers, p_expires_at, p_request_id);
END
$fn$
"""

FUNCTIONS = (AUDIT_ENTRY_FUNCTION, OUTBOX_EVENT_FUNCTION, IDEMPOTENCY_RECORD_FUNCTION,)
SIGNATURES = (
    "pms_write_audit_entry",
    "pms_write_outbox_event",
    "pms_write_idempotency_record",
)


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        for sql in FUNCTIONS:
            migrator.sql(sql)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        for name in SIGNATURES:
            migrator.sql(f"DROP FUNCTION IF EXISTS {name}")
