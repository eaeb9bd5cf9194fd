"""Migration 045: policy administration. `policy_set`, `policy_relation`,
`policy_attribute` and `policy_version` (one row per env, its id the env id, bumped with every
policy write; the gate reads it by primary key on every request). Born shard-ready
(`create_tenant_model`: primary key `(env_id, id)`); row-level security comes with every table
that has `env_id` (pms.db.migrator)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    create = create_tenant_model(migrator, database)

    @create
    class PolicySet(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        name = pw.CharField(max_length=100)
        description = pw.CharField(max_length=500, null=True)
        enabled = pw.BooleanField(default=True)
        rules = pmsf.JsonField()

        class Meta:
            table_name = "policy_set"
            indexes = [(("env_id", "name"), True)]

    @create
    class PolicyRelation(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        subject = pw.CharField(max_length=200)
        relation = pw.CharField(max_length=64)
        object = pw.CharField(max_length=200)

        class Meta:
            table_name = "policy_relation"
            indexes = [(("env_id", "subject", "relation", "object"), True)]

    @create
    class PolicyAttribute(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        target_kind = pw.CharField(max_length=16)
        target_id = pw.CharField(max_length=200)
        name = pw.CharField(max_length=64)
        value = pw.CharField(max_length=200)

        class Meta:
            table_name = "policy_attribute"
            indexes = [(("env_id", "target_kind", "target_id", "name"), True)]

    @create
    class PolicyVersion(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)

        class Meta:
            table_name = "policy_version"


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    for table in ("policy_version", "policy_attribute", "policy_relation", "policy_set"):
        migrator.remove_model(table)
