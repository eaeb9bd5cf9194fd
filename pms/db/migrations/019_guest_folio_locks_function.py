"""Migration 019: `pms_lock_guest_folios`, check-out's folio locks as a PL/pgSQL function
(PostgreSQL; SQLite keeps its own path), so that the locked guest-folio read of a check-out
(pms.services.cashiering.folio_state.read_guest_state) is one statement:
`SELECT * FROM pms_folio_state(env, pms_lock_guest_folios(env, stay), ...)`.

Why: the read was three statements, each parsed and planned on every check-out (0.5 ms
of wall time in `python -m bench.inprocess check-out`): the guest folio locked (its id by a
subquery), the stay's other OPEN folios locked in id order, then `pms_folio_state` with the
guest folio's id as a subquery again. A function keeps its plans per server connection
(PgBouncer-safe, unlike SQL `PREPARE`), generic by `plan_cache_mode` (migration 015's rule).

What it does, in the order check-out has always taken these locks (after the reservation row,
which the caller holds): the stay's guest folio (the OPEN one, else the latest) FOR UPDATE,
then the stay's other OPEN folios in id order FOR UPDATE; it returns the guest folio's id (NULL
when the stay has none). `pms_folio_state` (VOLATILE) runs after it returns, each of its
statements on a snapshot taken after the locks were granted (migration 016).
"""

import peewee as pw
from peewee_migrate import Migrator

LOCKS_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_lock_guest_folios(in_env uuid, in_stay uuid)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    guest uuid;
BEGIN
    SELECT g.id INTO guest FROM folio g
     WHERE g.env_id = in_env AND g.reservation_id = in_stay AND g.folio_type = 'GUEST'
     ORDER BY g.status = 'OPEN' DESC, g.created_at DESC
     LIMIT 1;
    IF guest IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM folio WHERE env_id = in_env AND id = guest FOR UPDATE;
    PERFORM 1 FROM folio
     WHERE env_id = in_env AND reservation_id = in_stay AND status = 'OPEN' AND id <> guest
     ORDER BY id FOR UPDATE;
    RETURN guest;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(LOCKS_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_lock_guest_folios(uuid, uuid)")
