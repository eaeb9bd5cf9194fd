"""Migration 048: a policy set's `default_effect` (`allow` or `deny`): what a request its rules
govern gets when none of its rules matches. `allow` (every existing set) leaves the decision to
the scopes and to the other sets; `deny` makes the set's allow rules the only way through
(docs/guides/authorization.md, "How a decision is combined")."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql("ALTER TABLE policy_set ADD COLUMN default_effect VARCHAR(8) NOT NULL "
                 "DEFAULT 'allow'")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql("ALTER TABLE policy_set DROP COLUMN default_effect")
