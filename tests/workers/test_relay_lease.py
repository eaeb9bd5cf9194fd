"""The leased relay: row leases, partition leases shared by several relays, per-aggregate order,
parking, reactions on their own cursor, audit push by lease, no transaction across broker I/O.

Time-dependent rules (a lease running out, a backoff) are tested by passing the relay its clock,
never by sleeping; tests with threads wait for an outcome with a generous deadline.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from pms.db.database import connection_scope, db
from pms.db.scope import unscoped
from pms.db.uow import read_scope, unit_of_work
from pms.events import event_type
from pms.models import AuditEntry, OutboxEvent, Property
from pms.models.platform import OUTBOX_PARTITIONS, outbox_partition
from pms.models.relay import RelayNode, RelayPartition
from pms.relay import audit_push
from pms.relay import operations as outbox_ops
from pms.relay import sweep as relay
from workers.publisher import AmqpEventPublisher, LocalEventPublisher
from workers.relay import OutboxRelay

pytestmark = pytest.mark.rabbitmq
PG_ONLY = pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)],
                                  indirect=True)


def make_aggregate(ctx, versions=1):
    """A property with `versions` events (created, then updates: aggregate versions 1..n)."""
    with unit_of_work(ctx) as uow:
        row = Property.create(code=f"L{uuid.uuid4().hex[:7]}", name="Lease", timezone="UTC",
                              currency_code="EUR")
        uow.emit(event_type("property", "created"), row, {"id": str(row.id)})
        uow.audit("property.created", row, after={"id": str(row.id)})
    for _ in range(versions - 1):
        with unit_of_work(ctx) as uow:
            uow.emit(event_type("property", "updated"), row, {"id": str(row.id)})
    return row


def env_rows(ctx):
    with read_scope(ctx):
        return list(OutboxEvent.select().order_by(OutboxEvent.created_at, OutboxEvent.id))


def owners():
    with unscoped():
        return {p.owner for p in RelayPartition.select() if p.owner}


def wait_for(check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection_scope():
            if check():
                return True
        time.sleep(0.1)
    return False


class Refusing:
    """A fake bus refusing the events `refuse(event)` names (as an unroutable type would)."""

    def __init__(self, refuse=lambda event: True):
        self.refuse = refuse
        self.sent = []

    def publish(self, event, *, routing_key=None):
        if self.refuse(event):
            raise relay.PublishRejected("unroutable: no queue is bound for this routing key")
        self.sent.append(event)


class RelayThread:
    """One relay, one thread, one publisher of its own (as the relay process runs it)."""

    def __init__(self, bus, env_id, **kw):
        self.relay = OutboxRelay(AmqpEventPublisher(bus.url, bus.exchange), env_id=env_id,
                                 idle_interval=0.05, **kw)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.relay.run_forever, args=(self.stop,),
                                       daemon=True)

    def start(self):
        self.thread.start()
        return self

    def halt(self):
        self.stop.set()
        self.relay.wake()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


# -- row leases ----------------------------------------------------------------------------------

def test_partition_is_a_stable_hash_of_the_aggregate_id(ctx, database):
    row = make_aggregate(ctx, versions=2)
    assert {r.partition for r in env_rows(ctx)} == {outbox_partition(str(row.id))}
    assert outbox_partition("a") == outbox_partition("a") < OUTBOX_PARTITIONS


def test_an_expired_row_lease_makes_the_row_due_again(ctx, database):
    make_aggregate(ctx)
    t0 = datetime.now(UTC)
    dead = relay.PartitionLease("dead-relay", lease_s=5)
    dead.heartbeat(t0)
    (claimed,) = relay.claim_batch(owner="dead-relay", limit=10, now=t0, lease_s=5,
                                   env_id=ctx.env_id)
    # the relay dies here: nothing marked, nothing released
    other = relay.PartitionLease("other-relay", lease_s=5)
    try:
        other.heartbeat(t0 + timedelta(seconds=1))
        assert relay.claim_batch(owner="other-relay", limit=10, now=t0 + timedelta(seconds=1),
                                 env_id=ctx.env_id) == []
        later = t0 + timedelta(seconds=6)
        assert other.heartbeat(later) == frozenset(range(OUTBOX_PARTITIONS))
        (again,) = relay.claim_batch(owner="other-relay", limit=10, now=later, lease_s=5,
                                     env_id=ctx.env_id)
        assert again.id == claimed.id
        # the dead relay's late mark changes nothing: the row is no longer leased to it
        out = relay.Outcomes(published=[claimed])
        relay.record_outcomes(out, [claimed], owner="dead-relay", now=later)
        (row,) = env_rows(ctx)
        assert row.published_at is None and row.lease_owner == "other-relay"
    finally:
        other.release()
        dead.release()


def test_partitions_are_shared_fairly_and_a_dead_relays_are_taken_over(ctx, database):
    t0 = datetime.now(UTC)
    a = relay.PartitionLease("relay-a", lease_s=9)
    b = relay.PartitionLease("relay-b", lease_s=9)
    try:
        assert len(a.heartbeat(t0)) == OUTBOX_PARTITIONS
        assert b.heartbeat(t0) == frozenset()  # all held by a live relay
        half = OUTBOX_PARTITIONS // 2
        assert len(a.heartbeat(t0 + timedelta(seconds=1))) == half  # b is short: a gives back
        assert len(b.heartbeat(t0 + timedelta(seconds=1))) == half
        assert a.owned.isdisjoint(b.owned)
        # a dies; after its lease b holds everything
        later = t0 + timedelta(seconds=11)
        assert len(b.heartbeat(later)) == OUTBOX_PARTITIONS
        with unscoped():
            assert [n.owner for n in RelayNode.select()] == ["relay-b"]
    finally:
        a.release()
        b.release()
    assert owners() == set()


def test_a_relay_started_beside_a_running_one_gets_its_share_within_seconds(ctx, database):
    # Was: heartbeats every third of the lease (10 s of the default 30 s), so the running relay
    # gave back at its next one and the new relay took at its own: up to 20 s with nothing to
    # do while the first relay fell behind (the `ari` bench's second relay).
    from pms.relay.partitions import REBALANCE_S

    t0 = datetime.now(UTC)
    a = relay.PartitionLease("relay-a", lease_s=30)
    b = relay.PartitionLease("relay-b", lease_s=30)
    try:
        assert len(a.heartbeat(t0)) == OUTBOX_PARTITIONS
        assert b.heartbeat(t0) == frozenset()
        soon = t0 + timedelta(seconds=REBALANCE_S)
        assert not a.due(t0 + timedelta(seconds=REBALANCE_S / 2))
        assert a.due(soon) and b.due(soon)
        assert len(a.heartbeat(soon)) == OUTBOX_PARTITIONS // 2
        assert len(b.heartbeat(soon)) == OUTBOX_PARTITIONS // 2
        assert REBALANCE_S <= 5
    finally:
        a.release()
        b.release()


def test_a_later_row_waits_while_an_earlier_row_of_its_aggregate_backs_off(ctx, database):
    row = make_aggregate(ctx, versions=3)
    other = make_aggregate(ctx)
    t0 = datetime.now(UTC)
    refuse_v1 = Refusing(lambda e: e["subject"] == str(row.id) and e["aggregateversion"] == 1)
    first = relay.relay_batch(refuse_v1, env_id=ctx.env_id, now=t0, max_attempts=2)
    # v1 refused; v2 and v3 of the same aggregate were not sent after it; the other went out
    assert [(e["subject"], e["aggregateversion"]) for e in refuse_v1.sent] == [(str(other.id), 1)]
    assert (first.failed, first.published) == (1, 1)
    # still backing off: nothing of that aggregate is due
    assert relay.relay_batch(refuse_v1, env_id=ctx.env_id, now=t0).claimed == 0
    # v1 parked after its second attempt. Was (before the relay healed): the later rows were then no
    # longer held back and went out without v1. Now a parked row holds them back until an
    # operator replays it (see test_a_parked_delta_blocks_its_aggregate_until_replayed).
    second = relay.relay_batch(refuse_v1, env_id=ctx.env_id, now=t0 + timedelta(seconds=61),
                               max_attempts=2)
    assert second.parked == 1
    later = t0 + timedelta(seconds=62 + relay.BEHIND_PARKED_S * 3)
    third = relay.relay_batch(refuse_v1, env_id=ctx.env_id, now=later)
    assert third.published == 0
    assert [e["subject"] for e in refuse_v1.sent] == [str(other.id)]


def test_parked_rows_are_not_due_and_replay_publishes_them(ctx, database, bus):
    # Was (before the relay healed) "unroutable rows end parked": an unroutable event is delivered now,
    # so the rows are parked by a bus that refuses them (as a nack would).
    make_aggregate(ctx)
    refusing = Refusing()
    now = datetime.now(UTC)
    for attempt in range(1, 4):
        result = relay.relay_batch(refusing, env_id=ctx.env_id, now=now, max_attempts=3)
        assert result.failed == 1 and result.parked == (1 if attempt == 3 else 0)
        now += timedelta(seconds=relay.MAX_BACKOFF_S + 1)
    (row,) = env_rows(ctx)
    assert row.parked_at is not None and row.attempts == 3 and "unroutable" in row.last_error
    # parked: not due, not retried every minute
    assert relay.relay_batch(refusing, env_id=ctx.env_id, now=now + timedelta(days=1)).claimed == 0
    status = outbox_ops.outbox_status(env_id=ctx.env_id)
    assert (status.parked, status.backlog, status.due) == (1, 0, 0)
    queue = bus.queue("hotel.pms.#")
    pub = AmqpEventPublisher(bus.url, bus.exchange)
    assert relay.relay_batch(pub, ids=[row.id]).published == 1
    pub.close()
    (row,) = env_rows(ctx)
    assert row.parked_at is None and row.published_at is not None
    assert [p.message_id for p, _ in bus.drain(queue)] == [str(row.id)]


# -- several relays at once ----------------------------------------------------------------------

def test_two_relays_in_parallel_publish_every_row_exactly_once_in_aggregate_order(ctx, database,
                                                                                 bus):
    queue = bus.queue("hotel.pms.#")
    aggregates = [make_aggregate(ctx) for _ in range(12)]
    first = RelayThread(bus, ctx.env_id, batch_size=4, lease_s=3).start()
    second = RelayThread(bus, ctx.env_id, batch_size=4, lease_s=3).start()
    errors = []

    def writer():
        try:
            for _ in range(4):
                for row in aggregates:
                    with unit_of_work(ctx) as uow:
                        uow.emit(event_type("property", "updated"), row, {"id": str(row.id)})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()

    writing = threading.Thread(target=writer)
    writing.start()
    writing.join(timeout=120)
    try:
        assert errors == []
        assert wait_for(lambda: outbox_ops.outbox_status(env_id=ctx.env_id).backlog == 0)
        # both relays end up holding a share of the partitions (heartbeat every lease/3)
        assert wait_for(lambda: len(owners()) == 2)
    finally:
        first.halt()
        second.halt()
    assert owners() == set()  # a clean stop gives the partitions back
    rows = env_rows(ctx)
    got = bus.drain(queue)
    ids = [props.message_id for props, _ in got]
    assert len(ids) == len(rows) == 12 * 5 and set(ids) == {str(r.id) for r in rows}
    seen = defaultdict(list)
    for _, event in got:
        seen[event["subject"]].append(event["aggregateversion"])
    assert all(versions == [1, 2, 3, 4, 5] for versions in seen.values()), dict(seen)


def test_audit_push_by_two_relays_pushes_each_row_once(ctx, database, bus):
    queue = bus.queue("audit.pms.#")
    for _ in range(20):
        make_aggregate(ctx)
    start = threading.Barrier(2, timeout=120)
    pushed, errors = [], []

    def pusher():
        publisher = AmqpEventPublisher(bus.url, bus.exchange)
        try:
            start.wait(timeout=30)
            with connection_scope():
                while True:
                    result = audit_push.push_audit_batch(publisher, limit=3, env_id=ctx.env_id)
                    pushed.extend(result.published_ids)
                    if result.claimed == 0:
                        return
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            publisher.close()

    threads = [threading.Thread(target=pusher) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    with read_scope(ctx):
        audit_ids = {str(a.id) for a in AuditEntry.select()}
        assert all(a.pushed_at is not None and a.lease_owner is None
                   for a in AuditEntry.select())
    delivered = [props.message_id for props, _ in bus.drain(queue)]
    assert sorted(pushed) == sorted(delivered) and set(delivered) == audit_ids
    assert len(delivered) == len(audit_ids) == 20


# -- failures ------------------------------------------------------------------------------------

class Exploding(AmqpEventPublisher):
    """Confirms nothing: raises in the middle of a batch (an encoder error, a pika assertion)."""

    def publish_many(self, events):
        raise AssertionError("pika: tx buffer size underflow")

    def start_many(self, events):
        raise AssertionError("pika: tx buffer size underflow")


@PG_ONLY
def test_a_publisher_raising_mid_batch_leaves_no_transaction_and_no_connection(ctx, database,
                                                                              bus, pg_database):
    for _ in range(3):
        make_aggregate(ctx)
    broken = RelayThread(bus, ctx.env_id, max_broker_backoff=0.2)
    broken.relay.publisher = Exploding(bus.url, bus.exchange)
    broken.start()
    try:
        # it keeps failing (sweep after sweep) while we look at the server
        assert wait_for(lambda: broken.relay.failed_sweeps >= 3)
        assert _idle_in_transaction(pg_database) == []
    finally:
        broken.halt()
    database.close()  # this thread's own (the writes above)
    assert database._in_use == {}  # the relay thread handed its pooled connection back
    # nothing stayed leased: another relay publishes the rows at once
    queue = bus.queue("hotel.pms.#")
    pub = AmqpEventPublisher(bus.url, bus.exchange)
    assert relay.relay_batch(pub, env_id=ctx.env_id).published == 3
    pub.close()
    assert len(bus.drain(queue)) == 3


def _idle_in_transaction(pg_database):
    import psycopg2

    from tests import pg

    conn = psycopg2.connect(pg.admin_url())
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pid, state, query FROM pg_stat_activity WHERE datname = %s "
                        "AND state LIKE 'idle in transaction%%'", (pg_database.name,))
            return cur.fetchall()
    finally:
        conn.close()


def test_a_stopped_relay_gives_back_its_partitions_rows_and_node(ctx, database, bus):
    bus.queue("hotel.pms.#")
    make_aggregate(ctx)
    running = RelayThread(bus, ctx.env_id).start()
    assert wait_for(lambda: outbox_ops.outbox_status(env_id=ctx.env_id).backlog == 0)
    assert owners() == {running.relay.owner}
    running.halt()
    assert owners() == set()
    with unscoped():
        assert RelayNode.select().where(RelayNode.owner == running.relay.owner).count() == 0


def test_a_publisher_and_a_relay_belong_to_one_thread(bus):
    pub = AmqpEventPublisher(bus.url, bus.exchange)
    assert pub.publish_many([]) == []
    caught = []

    def elsewhere():
        try:
            pub.publish_many([])
        except RuntimeError as exc:
            caught.append(exc)

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join()
    pub.close()
    assert caught and "one publisher per thread" in str(caught[0])


def test_reactions_left_by_a_stopped_relay_are_run_by_the_next(ctx, database):
    make_aggregate(ctx)
    now = datetime.now(UTC)
    # a relay publishes and marks, then stops before running the reaction
    relay.relay_batch(LocalEventPublisher(), env_id=ctx.env_id, now=now,
                      dispatch_types={"hotel:pms:property:created"})
    (row,) = env_rows(ctx)
    assert row.published_at is not None and row.dispatched_at is None
    ran = []
    nxt = OutboxRelay(LocalEventPublisher(), env_id=ctx.env_id, now=lambda: now,
                      subscribers={"hotel:pms:property:created": [ran.append]})
    totals = nxt.run_once()
    assert totals.published == 0 and totals.dispatched == 1
    assert [e["id"] for e in ran] == [str(row.id)]
    assert env_rows(ctx)[0].dispatched_at is not None



class Watching:
    """A fake bus noting whether a database transaction is open while it publishes."""

    def __init__(self):
        self.in_transaction = []

    def publish_many(self, events):
        self.in_transaction.append(db.in_transaction())
        return [None] * len(events)

    def start_many(self, events):
        self.in_transaction.append(db.in_transaction())
        return len(events)

    def finish_many(self, count):
        self.in_transaction.append(db.in_transaction())
        return [None] * count


def test_no_transaction_is_open_while_the_broker_is_called(ctx, database):
    for _ in range(5):
        make_aggregate(ctx, versions=2)
    bus = Watching()
    assert relay.relay_batch(bus, env_id=ctx.env_id, limit=3).published == 3
    totals = OutboxRelay(bus, env_id=ctx.env_id, batch_size=2).run_once()
    assert totals.published == 7 and totals.batches >= 4
    assert bus.in_transaction and not any(bus.in_transaction)


class Counting(Watching):
    """Watching, and every statement string the relay sends to the database meanwhile."""

    def __init__(self, monkeypatch):
        super().__init__()
        self.sql = []
        real = db.obj.execute_sql

        def execute_sql(sql, params=None):
            self.sql.append(sql)
            return real(sql, params)

        monkeypatch.setattr(db.obj, "execute_sql", execute_sql)
        self.sent = []

    def publish_many(self, events):
        self.sent.extend(events)
        return super().publish_many(events)

    def start_many(self, events):
        self.sent.extend(events)
        return super().start_many(events)


@PG_ONLY
def test_a_batch_is_marked_in_the_same_round_trip_as_the_next_claim(ctx, database, monkeypatch):
    # The leased relay writes every row twice (lease, then mark); sent apart, with their BEGIN
    # and COMMIT, that was six round trips a batch on the one relay thread. Now the marks of
    # batch n ride in front of the claim of batch n + 2 (batch n + 1 in flight meanwhile): one
    # string, one implicit transaction, and still only rows leased by this relay are marked.
    rows = [make_aggregate(ctx, versions=2) for _ in range(4)]
    bus = Counting(monkeypatch)
    totals = OutboxRelay(bus, env_id=ctx.env_id, batch_size=2).run_once()
    monkeypatch.undo()
    assert totals.published == 8 and not any(bus.in_transaction)
    claims = [s for s in bus.sql if "FOR UPDATE SKIP LOCKED" in s and '"outbox_event"' in s]
    riding = [s for s in claims if 'SET "published_at"' in s]
    marked_alone = [s for s in bus.sql if 'SET "published_at"' in s and s not in claims]
    assert len(riding) >= 2  # every batch but the first two claims carries marks
    assert len(marked_alone) <= 2  # the last batches of the drain: nothing left to ride on
    assert all(s.index('SET "published_at"') < s.index("FOR UPDATE SKIP LOCKED") for s in riding)
    published = env_rows(ctx)
    assert all(r.published_at is not None and r.lease_owner is None for r in published)
    sent = [(e["subject"], e["aggregateversion"]) for e in bus.sent]
    for row in rows:
        assert [v for s, v in sent if s == str(row.id)] == [1, 2]


@PG_ONLY
def test_the_claim_of_every_env_has_an_index_in_claim_order_and_room_for_hot_leases(database):
    # Migration 010. Without the index the relay of every env sorted the whole backlog on each
    # claim (80 ms a batch at 20,000 pending rows); without room on the page each lease wrote a
    # new entry in every index of outbox_event instead of a HOT update.
    with unscoped(), db.atomic():
        (definition,) = db.execute_sql(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'outbox_event_due_idx'").fetchone()
        (options,) = db.execute_sql(
            "SELECT reloptions FROM pg_class WHERE relname = 'outbox_event'").fetchone()
    assert "(created_at, id)" in definition
    assert "published_at IS NULL" in definition and "parked_at IS NULL" in definition
    assert "fillfactor=50" in (options or [])
