"""The shard-key rule, read from the PostgreSQL catalog (issue 26, "Keys that shard").

Tenant data is distributed by `env_id` (the shard key; README, "Keys that shard"). So that moving
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
right (env_id first in the key, the foreign keys composite, in the migration's SQL: see 031).
"""

from __future__ import annotations

from typing import Any

# Tables without env_id, each with its reason. Nothing here holds a tenant's data.
GLOBAL_TABLES: dict[str, str] = {
    "migratehistory": "peewee-migrate's list of applied migrations: one per database",
    "relay_node": "live outbox relay processes (heartbeats): the machinery of every tenant",
    "relay_partition": "leases of the 64 outbox partitions to relays: the machinery of every "
                       "tenant",
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
    out: list[str] = []
    for oid, (name, env) in tables.items():
        if env is None and name not in GLOBAL_TABLES:
            out.append(f"{name}: no env_id column and not in pms.db.shard_keys.GLOBAL_TABLES "
                       "(a tenant table needs env_id; a global one is listed with its reason)")
        if env is not None and name in GLOBAL_TABLES:
            out.append(f"{name}: listed in GLOBAL_TABLES but has an env_id column")
    has_pk = set()
    cursor.execute(_CONSTRAINTS)
    for relid, conname, contype, conkey, frelid, confkey, definition, exclops \
            in cursor.fetchall():
        if relid not in tables:
            continue
        table, env = tables[relid]
        where = f"{table}.{conname} ({_KINDS[contype]}) {definition}"
        if contype == "p":
            has_pk.add(relid)
        if env is None:
            if contype == "f" and tables.get(frelid, (None, None))[1] is not None:
                out.append(f"{where}: a global table must not reference tenant table "
                           f"{tables[frelid][0]}")
            continue
        if contype in ("p", "u"):
            if not conkey or conkey[0] != env:
                out.append(f"{where}: must start with env_id")
        elif contype == "x":
            ops = dict(zip(conkey, exclops or []))
            if ops.get(env) != "=":
                out.append(f"{where}: must compare env_id WITH =")
        elif contype == "f":
            parent, parent_env = tables.get(frelid, ("?", None))
            if parent_env is None:
                out.append(f"{where}: references {parent}, which has no env_id (a tenant row "
                           "may only reference its own env's rows)")
            elif env not in conkey or confkey[conkey.index(env)] != parent_env:
                out.append(f"{where}: must be composite with the env: "
                           f"FOREIGN KEY (env_id, ...) REFERENCES {parent} (env_id, ...)")
    for oid, (name, env) in tables.items():
        if env is not None and oid not in has_pk:
            out.append(f"{name}: a tenant table without a primary key "
                       "(give it PRIMARY KEY (env_id, id))")
    cursor.execute(_UNIQUE_INDEXES)
    for relid, index, keys, definition in cursor.fetchall():
        if relid not in tables or tables[relid][1] is None:
            continue
        if not keys or keys[0] != tables[relid][1]:
            out.append(f"{tables[relid][0]}.{index} (unique index) {definition}: "
                       "must start with env_id")
    return out


__all__ = ["GLOBAL_TABLES", "violations"]
