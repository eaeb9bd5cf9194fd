"""The relays' own bookkeeping: which relay holds which outbox partition, and which relays are
alive. Tenant-free tables (no env_id, so no RLS and not in ALL_MODELS): they name relays and
partition numbers, never tenant data. Read and written only by pms.services.relay_leases."""

from __future__ import annotations

import peewee

from pms.db.database import db
from pms.db.fields import UtcDateTimeField


class RelayPartition(peewee.Model):
    """One outbox partition (0..OUTBOX_PARTITIONS-1) and its current lease, if any."""

    partition = peewee.IntegerField(primary_key=True)
    owner = peewee.CharField(max_length=64, null=True)
    expires_at = UtcDateTimeField(null=True)

    class Meta:
        database = db
        table_name = "relay_partition"


class RelayNode(peewee.Model):
    """A live relay: its heartbeat decides the fair share of partitions each relay takes."""

    owner = peewee.CharField(max_length=64, primary_key=True)
    started_at = UtcDateTimeField()
    expires_at = UtcDateTimeField()

    class Meta:
        database = db
        table_name = "relay_node"
