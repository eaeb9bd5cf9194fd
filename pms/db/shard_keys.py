"""The shard-key rule, read from the PostgreSQL catalog ("Keys that shard").

Tenant data is distributed by `env_id` (the shard key; docs/architecture.md, "Keys that shard"). So that moving
to Citus or to `PARTITION BY HASH (env_id)` is mechanical, on every tenant table (a table with an
`env_id` column):
- the primary key, every unique constraint and every unique index start with `env_id`;
- every exclusion constraint compares `env_id` with `=`;
- every foreign key is composite with the env: `(env_id, x_id) REFERENCES parent (env_id, id)`,
  the parent a tenant table too.
A table without `env_id` is global and must be listed in GLOBAL_TABLES with its reason; no
foreign key may point from a global table to a tenant table (Citus reference tables cannot).

`violations(cursor)` returns one line per offending constraint, naming the table, the
constraint, its definition and what is wrong; `tests/services/test_shard_keys.py` fails on any.
`pms.db.migrations.031_shard_keys` converted the tables that existed then; new tables are born
right (env_id first in the key, the foreign keys composite, in the migration's SQL: see 038).
"""

from __future__ import annotations

import logging
from typing import Any

import peewee as pw

log = logging.getLogger("pms.migrations")

# Tables without env_id, each with its reason. Nothing here holds a tenant's data.
GLOBAL_TABLES: dict[str, str] = {
    "migratehistory": "peewee-migrate's list of applied migrations: one per database",
    "relay_node": "live outbox relay processes (heartbeats): the machinery of every tenant",
    "relay_partition": "leases of the 64 outbox partitions to relays: the machinery of every "
                       "tenant",
    "schedule_tick": "when each recurring task of the service is next due: the machinery of "
                     "every tenant",
    "stored_function": "the sha256 of each stored function's SQL file as a migration applied "
                       "it: the schema's own record (pms.db.function_files)",
}

_TABLES = """
SELECT c.oid, c.relname,
       (SELECT a.attnum FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attname = 'env_id' AND NOT a.attisdropped)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname
"""

_CONSTRAINTS = """
SELECT k.conrelid, k.conname, k.contype, k.conkey, k.confrelid, k.confkey,
       pg_get_constraintdef(k.oid),
       (SELECT array_agg(o.oprname::text ORDER BY i) FROM unnest(k.conexclop) WITH ORDINALITY
                                                          AS e(op, i)
          JOIN pg_operator o ON o.oid = e.op)
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
WHERE k.contype IN ('p', 'u', 'x', 'f')
ORDER BY c.relname, k.conname
"""

# Unique indexes that back no constraint (CREATE UNIQUE INDEX, peewee's unique indexes).
_UNIQUE_INDEXES = """
SELECT x.indrelid, i.relname, string_to_array(x.indkey::text, ' ')::int[],
       pg_get_indexdef(x.indexrelid)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = i.relnamespace AND n.nspname = current_schema()
WHERE x.indisunique
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid
                                                  AND k.conrelid = x.indrelid)
ORDER BY i.relname
"""

_KINDS = {"p": "primary key", "u": "unique", "x": "exclusion", "f": "foreign key"}


def violations(cursor: Any) -> list[str]:
    """Every constraint of the current schema that breaks the shard-key rule (see module doc),
    one line each: `table.constraint (kind) DEFINITION: what is wrong`."""
    cursor.execute(_TABLES)
    tables = {oid: (name, env) for oid, name, env in cursor.fetchall()}
    out = [*_table_offences(tables)]
    has_pk = set()
    cursor.execute(_CONSTRAINTS)
    for relid, conname, contype, conkey, frelid, confkey, definition, exclops \
            in cursor.fetchall():
        if relid not in tables:
            continue
        if contype == "p":
            has_pk.add(relid)
        why = _constraint_offence(tables, relid, contype, conkey, frelid, confkey, exclops)
        if why:
            out.append(f"{tables[relid][0]}.{conname} ({_KINDS[contype]}) {definition}: {why}")
    out.extend(f"{name}: a tenant table without a primary key (give it PRIMARY KEY (env_id, id))"
               for oid, (name, env) in tables.items() if env is not None and oid not in has_pk)
    cursor.execute(_UNIQUE_INDEXES)
    for relid, index, keys, definition in cursor.fetchall():
        if relid not in tables or tables[relid][1] is None:
            continue
        if not keys or keys[0] != tables[relid][1]:
            out.append(f"{tables[relid][0]}.{index} (unique index) {definition}: "
                       "must start with env_id")
    return out


def _table_offences(tables: dict[int, tuple[str, int | None]]) -> list[str]:
    out = []
    for name, env in tables.values():
        if env is None and name not in GLOBAL_TABLES:
            out.append(f"{name}: no env_id column and not in pms.db.shard_keys.GLOBAL_TABLES "
                       "(a tenant table needs env_id; a global one is listed with its reason)")
        if env is not None and name in GLOBAL_TABLES:
            out.append(f"{name}: listed in GLOBAL_TABLES but has an env_id column")
    return out


def _constraint_offence(tables: dict[int, tuple[str, int | None]], relid: int, contype: str,
                        conkey: list[int], frelid: int, confkey: list[int] | None,
                        exclops: list[str] | None) -> str | None:
    env = tables[relid][1]
    parent, parent_env = tables.get(frelid, ("?", None))
    if env is None:
        if contype == "f" and parent_env is not None:
            return f"a global table must not reference tenant table {parent}"
        return None
    if contype in ("p", "u"):
        return None if conkey and conkey[0] == env else "must start with env_id"
    if contype == "x":
        ops = dict(zip(conkey, exclops or [], strict=False))
        return None if ops.get(env) == "=" else "must compare env_id WITH ="
    if parent_env is None:
        return (f"references {parent}, which has no env_id (a tenant row may only reference "
                "its own env's rows)")
    if env not in conkey or confkey is None or confkey[conkey.index(env)] != parent_env:
        return ("must be composite with the env: "
                f"FOREIGN KEY (env_id, ...) REFERENCES {parent} (env_id, ...)")
    return None


# -- making the keys (migration 038 and every later migration that creates tenant tables) -----

# Cross-env tables whose rows the relay machinery (the outbox relay, the audit push, under
# `unscoped()`) marks by id alone across every env: they keep a plain (non-unique) index on id so
# those marks stay index lookups (under Citus they become multi-shard statements).
CROSS_ENV_BY_ID = ("outbox_event", "audit_entry")

_TENANT_TABLES = """
SELECT c.oid, c.relname, a.attnum
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'env_id' AND NOT a.attisdropped
WHERE c.relkind IN ('r', 'p')
ORDER BY c.relname
"""

_KEYS_TO_FIX = """
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
         deferred) in database.execute_sql(_KEYS_TO_FIX, (list(tenants),)).fetchall():
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


def apply_shard_keys(migrator: Any, database: pw.Database, label: str) -> None:
    """Queue `shard_key_statements` on the migrator (PostgreSQL; nothing on SQLite, which is
    never sharded). Idempotent: on a schema that follows the rule it changes nothing."""
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    for statement in shard_key_statements(database):
        log.info("%s: %s", label, statement)
        migrator.sql(statement)


def tenant_foreign_key_sql(table: str, column: str, parent: str, *, on_delete: str = "RESTRICT",
                           parent_column: str = "id", name: str | None = None) -> str:
    """`ALTER TABLE table ADD CONSTRAINT ... FOREIGN KEY (env_id, column) REFERENCES parent
    (env_id, id)`: for a reference column added after 038 (add it as a plain UUIDField: a
    peewee ForeignKeyField would say `REFERENCES parent (id)`, which no longer has a unique key
    of its own on PostgreSQL)."""
    action = on_delete.upper()
    if action in ("SET NULL", "SET DEFAULT"):
        action += f" ({_q(column)})"
    return (f"ALTER TABLE {_q(table)} ADD CONSTRAINT {_q(name or f'{table}_{column}_fkey')} "
            f"FOREIGN KEY (env_id, {_q(column)}) REFERENCES {_q(parent)} "
            f"(env_id, {_q(parent_column)}) "
            f"ON DELETE {action}")


def create_tenant_model(migrator: Any, database: pw.Database) -> Any:
    """`@create_tenant_model(migrator, database)` in place of `@migrator.create_model` for a
    tenant table made after migration 038. On PostgreSQL the table is created without its
    single-column foreign keys (peewee's `REFERENCES parent (id)` would fail: the parent's key is
    `(env_id, id)`), then its primary key becomes `(env_id, id)` and each ForeignKeyField a
    composite foreign key with its ON DELETE. On SQLite: `create_model` as it is."""
    def decorate(model: Any) -> Any:
        if not isinstance(database, pw.PostgresqlDatabase):
            return migrator.create_model(model)
        fks = [f for f in model._meta.sorted_fields if isinstance(f, pw.ForeignKeyField)]
        for field in fks:
            field.deferred = True  # peewee's create_table leaves deferred foreign keys out
        created = migrator.create_model(model)
        table = model._meta.table_name
        pkey = _q(f"{table}_pkey")
        migrator.sql(f"ALTER TABLE {_q(table)} DROP CONSTRAINT {pkey}, "
                     f"ADD CONSTRAINT {pkey} PRIMARY KEY (env_id, id)")
        for field in fks:
            migrator.sql(tenant_foreign_key_sql(
                table, field.column_name, field.rel_model._meta.table_name,
                on_delete=field.on_delete or "NO ACTION",
                parent_column=field.rel_field.column_name))
        return created
    return decorate


__all__ = ["CROSS_ENV_BY_ID", "GLOBAL_TABLES", "apply_shard_keys", "create_tenant_model",
           "shard_key_statements", "tenant_foreign_key_sql", "violations"]
