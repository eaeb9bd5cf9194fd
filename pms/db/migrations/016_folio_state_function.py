"""Migration 016: `pms_folio_state`, the folio state read of check-in, folio charge, card
payment and check-out (pms.services.cashiering.folio_state), with its optional locks, as a PL/pgSQL function
(PostgreSQL; SQLite keeps its own path).

Why: PostgreSQL planned the inline statement on every call for longer (0.9-1.2 ms)
than it ran it (0.3-0.45 ms). A PL/pgSQL function keeps its statements' plans per server
connection, which survives PgBouncer's transaction mode (SQL `PREPARE` does not); the function
setting `plan_cache_mode = force_generic_plan` keeps the plan cache from planning again per call
(see migration 015). It runs with the caller's rights, under row-level security.

Arguments: the env, the folio, the property and the holder filters (NULL: no filter), `in_lock`
(lock the stay's reservation row, then the folio row, FOR UPDATE, before reading: the order
every folio writer takes them), `in_code` (also read that active transaction code of the
property; NULL: `state_code` is NULL) and `in_others` (also read the stay's other OPEN folios
with their sums; false: `state_others` is NULL). The transaction code is a CASE branch, run
only when asked; the others are a second copy of the read, so the common call does not even
start their subplans (measured: 0.04 ms per call when present, unused, in the one statement).

Snapshots: the function is VOLATILE, so in READ COMMITTED each of its statements takes a new
snapshot (a STABLE function would run them all on the caller's one): the state is read by a
statement that starts after the locks are granted and sees every change committed before.

Columns: the folio's as pms.models.Folio lists them (`f_`), the property's timezone and
business date (`p_`), the reservation fields the folio rules read (`r_`), then the lines and
references as text (json) and the posted nights as date[] (`state_`). A test compares the
`f_`, `p_` and `r_` columns with the tables, so a change to one of them fails it until a
migration replaces this function.
"""

import peewee as pw
from peewee_migrate import Migrator

# the read, whole: one statement, one snapshot; {others} is the stay's other OPEN folios or NULL
_READ = """
        RETURN QUERY
        SELECT f.id, f.created_at, f.updated_at, f.env_id, f.version, f.reservation_id,
               f.property_id, f.room_number, f.status, f.folio_type, f.currency, f.closed_at,
               p.timezone, p.business_date,
               r.status, r.arrival_date, r.departure_date, r.nightly_prices, r.rate_plan_id,
               r.adults, r.children, r.confirmation_number, r.currency,
               (SELECT json_agg(json_build_array(c.id, c.category, c.description, c.amount::text,
                        c.currency, c.quantity, c.business_date, c.night, c.kind, c.created_at,
                        c.transaction_code, c.parent_id, c.reversal_of, c.moved_from_folio,
                        c.reason) ORDER BY c.created_at, c.id)::text
                  FROM folio_charge c WHERE c.env_id = in_env AND c.folio_id = f.id),
               (SELECT json_agg(json_build_array(m.id, m.amount::text, m.currency, m.method,
                        m.payment_method_id, m.status, m.created_at, m.kind, m.decline_code,
                        m.pre_authorization_id, m.voucher_code, m.external_id, m.refund_of,
                        m.attempts) ORDER BY m.created_at, m.id)::text
                  FROM folio_payment m WHERE m.env_id = in_env AND m.folio_id = f.id),
               (SELECT array_agg(n.night) FROM folio_charge n
                 WHERE n.env_id = in_env AND n.reservation_id = f.reservation_id
                   AND n.kind = 'room' AND n.night IS NOT NULL),
               (SELECT json_build_array(t.code, t.tax_rules)::text FROM transaction_code t
                 WHERE t.env_id = in_env AND t.property_id = f.property_id AND t.category = 'room'
                   AND t.active ORDER BY t.code = 'ROOM' DESC, t.code LIMIT 1),
               (SELECT json_agg(json_build_array(k.code, k.name, k.price::text, k.calculation,
                        k.category) ORDER BY u.ord)::text
                  FROM rate_plan rp
                  CROSS JOIN LATERAL json_array_elements_text(rp.package_codes::json)
                       WITH ORDINALITY AS u(code, ord)
                  JOIN package k ON k.env_id = in_env AND k.property_id = rp.property_id
                                AND k.code = u.code
                 WHERE rp.env_id = in_env AND rp.id = r.rate_plan_id),
               CASE WHEN in_code IS NOT NULL THEN
                   (SELECT json_build_array(t.code, t.name, t.category, t.tax_rules,
                                            t.ledger_account)::text
                      FROM transaction_code t
                     WHERE t.env_id = in_env AND t.property_id = f.property_id
                       AND t.code = in_code AND t.active LIMIT 1)
               END,
               {others}
          FROM folio f
          JOIN reservation r ON r.env_id = in_env AND r.id = f.reservation_id
          JOIN property p ON p.env_id = in_env AND p.id = f.property_id
         WHERE f.env_id = in_env AND f.id = in_folio
           AND (in_property IS NULL OR f.property_id = in_property)
           AND (in_holder IS NULL OR r.guest_profile_id = in_holder);
"""

_OTHERS = """(SELECT json_agg(json_build_array(o.id, o.currency, o.property_id,
                        (SELECT COALESCE(SUM(oc.amount), 0) FROM folio_charge oc
                          WHERE oc.env_id = in_env AND oc.folio_id = o.id)::text,
                        (SELECT COALESCE(SUM(op.amount), 0) FROM folio_payment op
                          WHERE op.env_id = in_env AND op.folio_id = o.id
                            AND op.status = 'CAPTURED')::text) ORDER BY o.id)::text
                  FROM folio o
                 WHERE o.env_id = in_env AND o.reservation_id = f.reservation_id
                   AND o.id <> f.id AND o.status = 'OPEN')"""

STATE_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_folio_state(in_env uuid, in_folio uuid, in_property uuid,
                                           in_holder uuid, in_lock boolean, in_code text,
                                           in_others boolean)
RETURNS TABLE (
    f_id uuid,
    f_created_at timestamp with time zone,
    f_updated_at timestamp with time zone,
    f_env_id uuid,
    f_version integer,
    f_reservation_id uuid,
    f_property_id uuid,
    f_room_number character varying,
    f_status character varying,
    f_folio_type character varying,
    f_currency character varying,
    f_closed_at timestamp with time zone,
    p_timezone character varying,
    p_business_date date,
    r_status character varying,
    r_arrival_date date,
    r_departure_date date,
    r_nightly_prices jsonb,
    r_rate_plan_id uuid,
    r_adults integer,
    r_children integer,
    r_confirmation_number character varying,
    r_currency character varying,
    state_charges text,
    state_payments text,
    state_posted_nights date[],
    state_room_code text,
    state_packages text,
    state_code text,
    state_others text)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
    IF in_lock THEN
        PERFORM 1 FROM reservation r
         WHERE r.env_id = in_env AND r.id = (SELECT f.reservation_id FROM folio f
                                              WHERE f.env_id = in_env AND f.id = in_folio)
           FOR UPDATE;
        PERFORM 1 FROM folio f WHERE f.env_id = in_env AND f.id = in_folio FOR UPDATE;
    END IF;
    IF in_others THEN""" + _READ.format(others=_OTHERS) + """    ELSE""" + _READ.format(
    others="NULL::text") + """    END IF;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(STATE_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS "
                     "pms_folio_state(uuid, uuid, uuid, uuid, boolean, text, boolean)")
