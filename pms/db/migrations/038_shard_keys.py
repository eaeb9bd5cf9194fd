"""Migration 038 ("Keys that shard"): every key on tenant data carries `env_id`.

PostgreSQL only. After it, on every tenant table (a table with an `env_id` column):
- the primary key is `(env_id, id)` (it was `(id)`), keeping its name `<table>_pkey`;
- every foreign key is composite with the env: `(env_id, x_id) REFERENCES parent (env_id, id)`,
  keeping its name and its ON DELETE / ON UPDATE actions (a SET NULL action names its own
  columns only: `SET NULL (x_id)`, so the row keeps its env);
- unique and exclusion constraints already led with `env_id` (every table so far was born so); this
  migration does not change them, the catalog check fails on any that does not.
So distributing the tenant tables by `env_id` (Citus `create_distributed_table`, or
`PARTITION BY HASH (env_id)`) needs no key change: both demand the distribution column in every
PK / UNIQUE / EXCLUDE and in the foreign keys between distributed tables.

The statements are generated from the catalog (pg_constraint) when the migration runs
(`pms.db.shard_keys.apply_shard_keys`), so a tenant table added by an earlier migration on a
parallel branch is converted too. A later migration creates its tenant tables with
`@create_tenant_model(migrator, database)` (peewee's `create_model` says `PRIMARY KEY (id)` and
`REFERENCES parent (id)`, which fails once the parent's key is `(env_id, id)`).
`tests/services/test_shard_keys.py` reads the catalog after every migration and names each
offending constraint. Each statement is logged.

The cross-env machinery (the outbox relay, the audit push: `unscoped()`) marks outbox and audit
rows by `id` alone across every env; those two tables keep a plain (non-unique) index on `id` so
those marks stay index lookups. Under Citus they become multi-shard statements.

Peewee cannot declare a composite primary key beside a single-column one nor a composite foreign
key: the models keep `id` as their logical key (every query also carries `env_id = <scope>`,
`pms.db.base.TenantModel`), and `pms.db.base` documents the physical keys.

SQLite follows nothing here: it holds one deployment's data in one file and is never sharded;
its keys stay `(id)`, its foreign keys single-column (docs/architecture.md, "Keys that shard").
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db.shard_keys import apply_shard_keys


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    apply_shard_keys(migrator, database, "038")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    raise NotImplementedError("038 is not rolled back: restore from a backup taken before it")
