"""Migration 010: the leased relay's claim at database speed (PostgreSQL; SQLite unchanged).

- `outbox_event_due_idx` (created_at, id) over pending rows (not published, not parked): the
  relay of every env (`pms-cli outbox relay`) leases the oldest due rows; the pending-rows index
  of 004 leads with env_id, so that claim read and sorted the WHOLE backlog on every batch
  (80 ms a batch with 20,000 rows pending), and now reads the batch in index order.
- fillfactor 50 on outbox_event: the relay writes every row twice after its insert, the lease
  (lease_owner, lease_until: no index reads them) and the mark (published_at). With full pages
  each lease put the new row version on another page and an entry in every index; with room on
  the page it is a HOT update that touches no index. The price is pages half full for rows
  written from now on, which the relay's purge removes after their retention.
"""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("CREATE INDEX IF NOT EXISTS outbox_event_due_idx ON outbox_event "
                     "(created_at, id) WHERE published_at IS NULL AND parked_at IS NULL")
        migrator.sql("ALTER TABLE outbox_event SET (fillfactor = 50)")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("ALTER TABLE outbox_event RESET (fillfactor)")
        migrator.sql("DROP INDEX IF EXISTS outbox_event_due_idx")
