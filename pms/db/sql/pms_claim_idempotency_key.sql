-- pms_claim_idempotency_key
--
-- An Idempotency-Key answers once: the claim that rides a one-transaction request's first
-- message. Returns nothing when the key is this transaction's; SQLSTATE PMI01 when another live
-- transaction holds it (409 idempotency_key_in_use); PMI02 when it has a live record (the
-- request goes the general way); an expired record is deleted and the key claimed.
-- Reference: the general path of pms.api.idempotency (its claim in a round trip of its own).
-- Test: tests/api/test_idempotency_in_transaction.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_claim_idempotency_key(p_env uuid, p_key text, p_now timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
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
$function$;
