-- pms_write_audit_entry
--
-- SPEC rule 4 (a change commits with its outbox and audit rows): the journal row every write
-- sends with its COMMIT, one audit_entry row from its columns as one
-- jsonb document (a column the document does not name is NULL: the table has no server-side
-- defaults). The INSERT's plan is made once per server connection.
-- Reference: the plain INSERT of pms.db.base (TenantModel.insert_statement, the SQLite path).
-- Test: tests/services/test_key_lookup_plans.py (its settings), tests/services/test_booking_write_path.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_write_audit_entry(in_row jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    INSERT INTO audit_entry SELECT * FROM jsonb_populate_record(NULL::audit_entry, in_row);
END
$function$;
