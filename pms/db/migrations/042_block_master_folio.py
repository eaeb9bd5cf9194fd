"""Migration 042: a folio belongs to a reservation or to a room block (the block's
master folio), never both, never neither.

- `folio.block_id` (new) and `folio.reservation_id` (now nullable): the owner. On PostgreSQL a
  CHECK (`folio_one_owner`) says exactly one is set; SQLite cannot add a CHECK to a table, the
  service (pms.services.cashiering.master_folios) is the only writer of block folios there.
- `folio_block_master`: a unique index on (env_id, block_id) WHERE block_id IS NOT NULL, so a
  block has one master folio even when two openings race (both databases).
- `folio_charge.reservation_id` nullable: a master folio's lines have no stay.
- PostgreSQL: composite foreign keys (shard keys, pms.db.shard_keys) folio (env_id, block_id)
  -> room_block and room_block (env_id, folio_id) -> folio, both RESTRICT (deleting a block
  deletes its empty master folio first: pms.services.groups.room_blocks.delete_block).
- PostgreSQL: `pms_folio_state` (migration 030's read) outer-joins the reservation, so a master
  folio is read by the same function (its `r_` columns NULL; a holder session never sees it:
  `r.guest_profile_id = holder` is not true for a NULL stay). Same arguments, same locks (the
  stay's row is locked first when there is one), same settings.
"""

import importlib

import peewee as pw
from peewee_migrate import Migrator

from pms.db.shard_keys import tenant_foreign_key_sql

STATE_SIGNATURE = "pms_folio_state(uuid, uuid, uuid, uuid, boolean, text, boolean)"
INNER = "JOIN reservation r ON r.env_id = in_env AND r.id = f.reservation_id"
OUTER = "LEFT " + INNER
ONE_OWNER = ("ALTER TABLE folio ADD CONSTRAINT folio_one_owner "
             "CHECK ((reservation_id IS NULL) <> (block_id IS NULL))")
MASTER_INDEX = ("CREATE UNIQUE INDEX folio_block_master ON folio (env_id, block_id) "
                "WHERE block_id IS NOT NULL")


def _state_function(outer: bool) -> str:
    sql = importlib.import_module("pms.db.migrations.030_row_typed_functions")._folio_state()
    if sql.count(INNER) != 2:  # pragma: no cover - migrations 016 and 030 are frozen
        raise RuntimeError("pms_folio_state: the reservation join is not where it was")
    return sql.replace(INNER, OUTER) if outer else sql


def _replace_state(migrator: Migrator, outer: bool) -> None:
    migrator.sql(f"DROP FUNCTION IF EXISTS {STATE_SIGNATURE}")
    migrator.sql(_state_function(outer))
    migrator.sql(f"ALTER FUNCTION {STATE_SIGNATURE} SET enable_seqscan = off")  # as 030's


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('folio', block_id=pw.UUIDField(null=True))
    migrator.drop_not_null('folio', 'reservation')
    migrator.drop_not_null('folio_charge', 'reservation')
    migrator.sql(MASTER_INDEX)
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(ONE_OWNER)
        migrator.sql(tenant_foreign_key_sql("folio", "block_id", "room_block"))
        migrator.sql(tenant_foreign_key_sql("room_block", "folio_id", "folio"))
        _replace_state(migrator, True)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Back to folios of reservations only (refused while a master folio exists: the NOT NULL
    fails)."""
    if isinstance(database, pw.PostgresqlDatabase):
        _replace_state(migrator, False)
        migrator.sql("ALTER TABLE room_block DROP CONSTRAINT room_block_folio_id_fkey")
        migrator.sql("ALTER TABLE folio DROP CONSTRAINT folio_block_id_fkey")
        migrator.sql("ALTER TABLE folio DROP CONSTRAINT folio_one_owner")
    migrator.sql("DROP INDEX folio_block_master")
    migrator.add_not_null('folio_charge', 'reservation')
    migrator.add_not_null('folio', 'reservation')
    migrator.remove_fields('folio', 'block_id')
