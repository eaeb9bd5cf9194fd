"""Keys that shard: after every migration, every primary key, unique constraint,
unique index and exclusion constraint of a tenant table carries `env_id` (first; `=` in an
exclusion), every foreign key is composite with it, and only the listed global tables lack it
(pms.db.shard_keys). Read from the PostgreSQL catalog; SQLite is not sharded (README).

When the first test fails, its message lists each offending constraint with its definition and
the fix: copy the pattern of migration 038 (PRIMARY KEY (env_id, id), FOREIGN KEY (env_id, x_id)
REFERENCES parent (env_id, id)) into the migration that made the table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from pms.db.shard_keys import GLOBAL_TABLES, violations

pytestmark = pytest.mark.postgres


@pytest.fixture
def owner(pg_database: Any) -> Iterator[Any]:
    """A cursor of the owner (who migrates) in a transaction that is rolled back."""
    conn = psycopg2.connect(pg_database.owner_url)
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.rollback()
        conn.close()


def test_every_tenant_key_carries_env_id(owner):
    found = violations(owner)
    assert not found, ("constraints that break the shard-key rule (pms.db.shard_keys; fix them "
                       "in the migration that made the table, as 038 does):\n  "
                       + "\n  ".join(found))


def test_the_global_tables_exist_and_each_has_its_reason(owner):
    owner.execute("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                  "AND n.nspname = current_schema() WHERE c.relkind = 'r'")
    tables = {row[0] for row in owner.fetchall()}
    assert set(GLOBAL_TABLES) <= tables
    assert all(len(reason) > 20 for reason in GLOBAL_TABLES.values())


def test_the_check_names_every_kind_of_offence(owner):
    """The control: tables made wrong in each way the rule forbids are each named."""
    owner.execute("""
        CREATE TABLE shard_bad_global (id uuid PRIMARY KEY, property_id uuid);
        CREATE TABLE shard_bad_pk (id uuid PRIMARY KEY, env_id uuid NOT NULL, code text,
                                   starts date, ends date);
        CREATE TABLE shard_no_pk (env_id uuid NOT NULL, id uuid);
        ALTER TABLE shard_bad_pk ADD CONSTRAINT shard_bad_unique UNIQUE (code, env_id);
        CREATE UNIQUE INDEX shard_bad_index ON shard_bad_pk (code);
        CREATE UNIQUE INDEX shard_good_index ON shard_bad_pk (env_id, code);
        CREATE EXTENSION IF NOT EXISTS btree_gist;
        ALTER TABLE shard_bad_pk ADD CONSTRAINT shard_bad_exclusion EXCLUDE USING gist
            (code WITH =, daterange(starts, ends) WITH &&);
        ALTER TABLE shard_no_pk ADD CONSTRAINT shard_bad_fk FOREIGN KEY (id)
            REFERENCES shard_bad_pk (id);
        ALTER TABLE shard_bad_global ADD CONSTRAINT shard_global_fk FOREIGN KEY (property_id)
            REFERENCES shard_bad_pk (id);
        CREATE TABLE shard_to_global (id uuid, env_id uuid NOT NULL,
                                      g uuid REFERENCES shard_bad_global (id),
                                      PRIMARY KEY (env_id, id));
    """)
    found = "\n".join(violations(owner))
    for expected in (
        "shard_bad_global: no env_id column and not in pms.db.shard_keys.GLOBAL_TABLES",
        "shard_bad_pk.shard_bad_pk_pkey (primary key) PRIMARY KEY (id): must start with env_id",
        "shard_bad_pk.shard_bad_unique (unique) UNIQUE (code, env_id): must start with env_id",
        "shard_bad_pk.shard_bad_index (unique index)",
        "shard_bad_pk.shard_bad_exclusion (exclusion)",
        "must compare env_id WITH =",
        "shard_no_pk.shard_bad_fk (foreign key) FOREIGN KEY (id) REFERENCES shard_bad_pk(id)",
        "must be composite with the env",
        "shard_no_pk: a tenant table without a primary key",
        "shard_bad_global.shard_global_fk (foreign key)",
        "a global table must not reference tenant table shard_bad_pk",
        "references shard_bad_global, which has no env_id",
    ):
        assert expected in found, found
    assert "shard_good_index" not in found
    assert "shard_to_global.shard_to_global_pkey" not in found


def test_a_foreign_key_is_composite_on_the_env_itself(owner):
    """A key that holds env_id but pairs it with another column of the parent is no shard key."""
    owner.execute("""
        CREATE TABLE shard_parent (env_id uuid NOT NULL, id uuid, other uuid,
                                   PRIMARY KEY (env_id, id), UNIQUE (env_id, other, id));
        CREATE TABLE shard_child (env_id uuid NOT NULL, id uuid, p uuid, PRIMARY KEY (env_id, id),
            CONSTRAINT shard_crossed FOREIGN KEY (p, env_id, id)
                REFERENCES shard_parent (env_id, other, id),
            CONSTRAINT shard_right FOREIGN KEY (env_id, p) REFERENCES shard_parent (env_id, id));
    """)
    found = "\n".join(violations(owner))
    assert "shard_child.shard_crossed" in found
    assert "shard_right" not in found


def test_a_table_made_after_031_is_born_with_the_keys(pg_database):
    """`create_tenant_model` (the decorator a later migration uses in place of
    `migrator.create_model`) makes a table the check accepts, whose composite foreign key keeps
    a row to its own env's parent: run through peewee-migrate's Migrator on the owner, inside a
    transaction that is rolled back."""
    import uuid

    import peewee as pw
    from peewee_migrate import Migrator

    from pms.db.shard_keys import create_tenant_model

    database = pw.PostgresqlDatabase(None)
    database.init(pg_database.owner_url.rsplit("/", 1)[1], dsn=pg_database.owner_url)
    try:
        with database.atomic() as txn:
            migrator = Migrator(database)

            @create_tenant_model(migrator, database)
            class Parent(pw.Model):
                id = pw.UUIDField(primary_key=True)
                env_id = pw.UUIDField()

                class Meta:
                    table_name = "shard_born_parent"

            @create_tenant_model(migrator, database)
            class Child(pw.Model):
                id = pw.UUIDField(primary_key=True)
                env_id = pw.UUIDField()
                parent = pw.ForeignKeyField(Parent, column_name="parent_id", on_delete="CASCADE")

                class Meta:
                    table_name = "shard_born_child"

            migrator()
            cur = database.cursor()
            found = [v for v in violations(cur) if "shard_born" in v]
            assert found == []
            cur.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                        "WHERE conrelid = 'shard_born_child'::regclass ORDER BY contype")
            assert [r[0] for r in cur.fetchall()] == [
                "FOREIGN KEY (env_id, parent_id) REFERENCES shard_born_parent(env_id, id) "
                "ON DELETE CASCADE",
                "PRIMARY KEY (env_id, id)"]
            a, b, p = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
            cur.execute("INSERT INTO shard_born_parent (id, env_id) VALUES (%s, %s)",
                        (str(p), str(a)))
            cur.execute("SAVEPOINT s")
            with pytest.raises(psycopg2.errors.ForeignKeyViolation):
                cur.execute("INSERT INTO shard_born_child (id, env_id, parent_id) "
                            "VALUES (%s, %s, %s)", (str(uuid.uuid4()), str(b), str(p)))
            cur.execute("ROLLBACK TO SAVEPOINT s")
            txn.rollback()
    finally:
        database.close()
