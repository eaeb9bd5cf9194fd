"""Migration 047: the relay's held-back check reads only the unpublished rows of an
aggregate (`outbox_event_pending_versions_idx`, partial: `published_at IS NULL`, parked rows
included, as they block too).

Why: the claim holds a picked row back while an earlier version of its aggregate is unpublished
(pms.relay.claim). It probed the full (env_id, subject, aggregate_version) index, which walks
every earlier version of the aggregate, published ones too, and reads each from the table to
see that it was published. An ARI stream gets a version with every booking of its room type
, so after 12,500 versions per room type the claim of 500 rows ran past the 5 s
statement timeout (a scratch claim with 100,000 published rows, half of them on four ARI
streams), and under `make bench` the ARI events of the load waited 11 s at p95. The partial
index holds the backlog only: the check costs what is pending, not the history. The lease's
update stays HOT (none of these columns change with it).
"""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql("CREATE INDEX IF NOT EXISTS outbox_event_pending_versions_idx ON outbox_event "
                 "(env_id, subject, aggregate_version) WHERE published_at IS NULL")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql("DROP INDEX IF EXISTS outbox_event_pending_versions_idx")
