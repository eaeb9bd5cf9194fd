"""Migration 031 (issue 26, "Keys that shard"): every key on tenant data carries `env_id`.

PostgreSQL only. After it, on every tenant table (a table with an `env_id` column):
- the primary key is `(env_id, id)` (it was `(id)`), keeping its name `<table>_pkey`;
- every foreign key is composite with the env: `(env_id, x_id) REFERENCES parent (env_id, id)`,
  keeping its name and its ON DELETE / ON UPDATE actions (a SET NULL action names its own
  columns only: `SET NULL (x_id)`, so the row keeps its env);
- unique and exclusion constraints already led with `env_id` (issues 1-34 were born so); this
  migration does not change them, the catalog check below fails on any that does not.
So distributing the tenant tables by `env_id` (Citus `create_distributed_table`, or
`PARTITION BY HASH (env_id)`) needs no key change: both demand the distribution column in every
PK / UNIQUE / EXCLUDE and in the foreign keys between distributed tables.

The statements are generated from the catalog (pg_constraint) when the migration runs, so a
tenant table added by an earlier migration on a parallel branch is converted too; a table added
by a later migration must be born right (`tests/unit/test_shard_keys.py` reads the catalog after
every migration and names each offending constraint). Each statement is logged.

The cross-env machinery (the outbox relay, the audit push: `unscoped()`) marks outbox and audit
rows by `id` alone across every env; those two tables keep a plain (non-unique) index on `id` so
those marks stay index lookups. Under Citus they become multi-shard statements.

Peewee cannot declare a composite primary key beside a single-column one nor a composite foreign
key: the models keep `id` as their logical key (every query also carries `env_id = <scope>`,
`pms.db.base.TenantModel`), and `pms.db.base` documents the physical keys.

SQLite follows nothing here: it holds one deployment's data in one file and is never sharded;
its keys stay `(id)`, its foreign keys single-column (README, "Keys that shard").
"""

import logging

import peewee as pw
from peewee_migrate import Migrator

log = logging.getLogger("pms.migrations")

# Cross-env tables whose rows the relay machinery addresses by id alone (see above).
CROSS_ENV_BY_ID = ("outbox_event", "audit_entry")

_TENANT_TABLES = """
SELECT c.oid, c.relname, a.attnum
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'env_id' AND NOT a.attisdropped
WHERE c.relkind IN ('r', 'p')
ORDER BY c.relname
"""

_CONSTRAINTS = """
SELECT k.conname, k.contype, k.conrelid, k.conkey, k.confrelid, k.confkey,
       k.confupdtype, k.confdeltype, k.condeferrable, k.condeferred
FROM pg_constraint k
WHERE k.conrelid = ANY(%s) AND k.contype IN ('p', 'f')
ORDER BY k.conrelid, k.conname
"""

_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL",
            "d": "SET DEFAULT"}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(database: pw.Database, table_oid: int) -> dict[int, str]:
    rows = database.execute_sql(
        "SELECT attnum, attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
        "AND NOT attisdropped", (table_oid,)).fetchall()
    return dict(rows)


def shard_key_statements(database: pw.Database) -> list[str]:
    """The DDL that puts env_id into every PK and FK of the tenant tables, in order: drop the
    single-column foreign keys, replace the primary keys, add the composite foreign keys."""
    tenants = {oid: (name, env_attnum)
               for oid, name, env_attnum in database.execute_sql(_TENANT_TABLES).fetchall()}
    if not tenants:
        return []
    cols = {oid: _columns(database, oid) for oid in tenants}
    drops: list[str] = []
    keys: list[str] = []
    adds: list[str] = []
    for (conname, contype, relid, conkey, frelid, confkey, upd, dele, deferrable,
         deferred) in database.execute_sql(_CONSTRAINTS, (list(tenants),)).fetchall():
        table, env_attnum = tenants[relid]
        if env_attnum in conkey:
            continue
        names = [cols[relid][n] for n in conkey]
        if contype == "p":
            keys.append(f"ALTER TABLE {_q(table)} DROP CONSTRAINT {_q(conname)}")
            keys.append(f"ALTER TABLE {_q(table)} ADD CONSTRAINT {_q(conname)} "
                        f"PRIMARY KEY (env_id, {', '.join(map(_q, names))})")
            continue
        if frelid not in tenants:  # a tenant row pointing at a global table: left as it is
            continue
        parent = tenants[frelid][0]
        parent_names = [cols[frelid][n] for n in confkey]
        on_delete = _ACTIONS[dele]
        if dele in ("n", "d"):
            on_delete += f" ({', '.join(map(_q, names))})"
        drops.append(f"ALTER TABLE {_q(table)} DROP CONSTRAINT {_q(conname)}")
        adds.append(
            f"ALTER TABLE {_q(table)} ADD CONSTRAINT {_q(conname)} FOREIGN KEY "
            f"(env_id, {', '.join(map(_q, names))}) REFERENCES {_q(parent)} "
            f"(env_id, {', '.join(map(_q, parent_names))}) "
            f"ON UPDATE {_ACTIONS[upd]} ON DELETE {on_delete}"
            + (" DEFERRABLE" if deferrable else "")
            + (" INITIALLY DEFERRED" if deferred else ""))
    names = {name for name, _ in tenants.values()}
    by_id = [f"CREATE INDEX IF NOT EXISTS {_q(t + '_id_idx')} ON {_q(t)} (id)"
             for t in CROSS_ENV_BY_ID if t in names]
    return drops + keys + adds + by_id


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    for statement in shard_key_statements(database):
        log.info("031: %s", statement)
        migrator.sql(statement)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    raise NotImplementedError("031 is not rolled back: restore from a backup taken before it")
