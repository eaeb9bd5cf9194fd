"""Partition leases: which outbox partitions (crc32 of the aggregate id) this relay holds.

A partition is held by one live relay at a time, so an aggregate's rows go out through one relay
and keep their order while several relays share the load. Heartbeats (one short bookkeeping
transaction each) renew the relay's node and partitions, take free or expired partitions, and
give extras back when another live relay holds fewer than its fair share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta

from pms.db.scope import unscoped
from pms.models.platform import OUTBOX_PARTITIONS, OutboxEvent
from pms.models.relay import RelayNode, RelayPartition
from pms.relay.core import DEFAULT_LEASE_S, bookkeeping, update_chosen

# The longest a relay goes between heartbeats: how soon partitions are shared with a relay that
# started (measured: with the third of a 30 s lease instead, the second relay of the `ari`
# bench held nothing for its first 20 s while the first one fell behind).
REBALANCE_S = 2.0


class PartitionLease:
    """This relay's share of the outbox partitions, kept by heartbeats.

    Each heartbeat (one short write transaction) renews the relay's node and partitions, takes
    free or expired partitions and, when another live relay holds fewer than its fair share
    (ceil(partitions / live relays)), gives its extras back between batches. A dead relay's
    partitions are taken over once its lease expires.
    """

    def __init__(self, owner: str, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.owner = owner
        self.lease_s = lease_s
        self.owned: frozenset[int] = frozenset()
        self.target = OUTBOX_PARTITIONS
        self.renewed_at: datetime | None = None

    def due(self, now: datetime) -> bool:
        """Heartbeat now? Every third of the lease or every REBALANCE_S, whichever is
        sooner (and at once when it holds none yet), so that a relay that starts beside a
        running one gets its share within seconds, not a lease or two later: the running one
        gives back at its next heartbeat, the new one takes at its own."""
        if self.renewed_at is None or len(self.owned) < self.target:
            return True
        period = min(self.lease_s / 3, REBALANCE_S)
        return (now - self.renewed_at).total_seconds() >= period

    def heartbeat(self, now: datetime) -> frozenset[int]:
        until = now + timedelta(seconds=self.lease_s)
        with unscoped(), bookkeeping():
            (RelayNode.insert(owner=self.owner, started_at=now, expires_at=until)
             .on_conflict(conflict_target=[RelayNode.owner],
                          update={RelayNode.expires_at: until}).execute())
            RelayNode.delete().where(RelayNode.expires_at < now).execute()
            live = [n.owner for n in RelayNode.select(RelayNode.owner)]
            held: dict[str, int] = {o: 0 for o in live}
            for part in RelayPartition.select().where(RelayPartition.owner.is_null(False)
                                                      & (RelayPartition.expires_at > now)):
                held[part.owner] = held.get(part.owner, 0) + 1
            fair = math.ceil(OUTBOX_PARTITIONS / max(len(live), 1))
            hungry = any(held.get(o, 0) < OUTBOX_PARTITIONS // len(live) for o in live
                         if o != self.owner)
            self.target = fair if hungry else OUTBOX_PARTITIONS
            mine = sorted(p for (p,) in RelayPartition.update(expires_at=until)
                          .where(RelayPartition.owner == self.owner)
                          .returning(RelayPartition.partition).tuples().execute())
            if len(mine) > self.target:
                extra = mine[self.target:]
                RelayPartition.update(owner=None, expires_at=None).where(
                    RelayPartition.partition.in_(extra)
                    & (RelayPartition.owner == self.owner)).execute()
                mine = mine[:self.target]
            elif len(mine) < self.target:
                mine += [p for (p,) in self._take(self.target - len(mine), now, until)]
                # Whatever was free is taken; more only frees up when another relay gives
                # some back or dies, which the next timed heartbeat sees.
                self.target = len(mine)
        self.owned = frozenset(mine)
        self.renewed_at = now
        return self.owned

    def _take(self, count: int, now: datetime, until: datetime) -> Iterable[tuple[int]]:
        free = ((RelayPartition.owner.is_null()) | (RelayPartition.expires_at.is_null())
                | (RelayPartition.expires_at <= now))
        candidates = (RelayPartition.select(RelayPartition.partition).where(free)
                      .order_by(RelayPartition.partition).limit(count))
        return (update_chosen(RelayPartition, RelayPartition.partition, candidates,
                              {RelayPartition.owner: self.owner,
                               RelayPartition.expires_at: until})
                .returning(RelayPartition.partition).tuples().execute())

    def release(self) -> None:
        """Give back every partition, row lease and the node (a clean stop)."""
        with unscoped(), bookkeeping():
            RelayPartition.update(owner=None, expires_at=None).where(
                RelayPartition.owner == self.owner).execute()
            RelayNode.delete().where(RelayNode.owner == self.owner).execute()
            OutboxEvent.update(lease_owner=None, lease_until=None).where(
                OutboxEvent.lease_owner == self.owner).execute()
        self.owned = frozenset()
        self.renewed_at = None


__all__ = ["PartitionLease"]
