"""Reactions that need no bus, version order whatever the writers' clocks, the database's clock
for everything compared across hosts, and a parked delta that holds its stream back until it is
replayed. A stream is (env, aggregate type, subject): what one `aggregateversion` counter
numbers; streams that share a subject (a room type's own events, its inventory and its ARI)
never wait for each other."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from pms.db.scope import unscoped
from pms.db.uow import read_scope, unit_of_work
from pms.events import event_type
from pms.models import OutboxEvent, Property
from pms.models.relay import RelayPartition
from pms.relay import operations as outbox_ops
from pms.relay import sweep as relay
from pms.relay.claim import in_version_order
from pms.relay.clock import DbClock, database_now
from workers.publisher import AmqpEventPublisher, LocalEventPublisher
from workers.relay import OutboxRelay

PG_ONLY = pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)],
                                  indirect=True)
CREATED = event_type("property", "created")
# the property's own stream, counted by its row (a delta-carrying family such as rate_schedule
# is a stream of its own, with its own versions)
DELTA = "hotel:pms:property:updated"


def make_aggregate(ctx, *deltas, type_=DELTA):
    """A property (v1: total 0), then one event per delta (versions 2..n), one stream."""
    with unit_of_work(ctx) as uow:
        row = Property.create(code=f"O{uuid.uuid4().hex[:7]}", name="Order", timezone="UTC",
                              currency_code="EUR")
        uow.emit(CREATED, row, {"id": str(row.id), "total": 0})
    for delta in deltas:
        with unit_of_work(ctx) as uow:
            uow.emit(type_, row, {"id": str(row.id), "delta": delta})
    return row


def env_rows(ctx):
    with read_scope(ctx):
        return list(OutboxEvent.select().order_by(OutboxEvent.aggregate_version,
                                                  OutboxEvent.created_at))


def restamp(rows, created):
    """Give rows the `created_at` a writer with another clock would have given them."""
    with unscoped(), unit_of_work_free():
        for row, at in zip(rows, created, strict=True):
            OutboxEvent.update(created_at=at).where(OutboxEvent.id == row.id).execute()


def unit_of_work_free():
    from pms.db.database import db, write_begin_args

    return db.atomic(**write_begin_args())


class Refusing:
    """A bus refusing the events `refuse(event)` names (as a nack would); records the rest."""

    def __init__(self, refuse=lambda event: False):
        self.refuse = refuse
        self.sent = []

    def publish(self, event, *, routing_key=None):
        if self.refuse(event):
            raise relay.PublishRejected("nacked by the broker")
        self.sent.append(event)


class Down:
    def publish(self, event, *, routing_key=None):
        raise relay.BrokerUnavailable("connection refused")


class VersionOrderConsumer:
    """A consumer that applies an aggregate's events in aggregateversion order, dropping any
    version not above the last it applied (the usual dedup-by-version consumer)."""

    def __init__(self):
        self.last: dict[str, int] = {}
        self.total: dict[str, int] = {}

    def apply(self, events):
        for e in events:
            subject, version = e["subject"], e["aggregateversion"]
            if version <= self.last.get(subject, 0):
                continue
            self.last[subject] = version
            data = e["data"]
            self.total[subject] = (data["total"] if "total" in data
                                   else self.total.get(subject, 0) + data["delta"])


# -- version order, the database's clock -------------------------------------------------

def test_an_aggregates_rows_go_out_in_version_order_whatever_their_created_at(ctx, database):
    row = make_aggregate(ctx, 10, 5, -3)
    other = make_aggregate(ctx, 1)
    v1, v2, v3, v4 = [r for r in env_rows(ctx) if r.subject == str(row.id)]
    # the writers' clocks disagreed: v4 looks oldest, v1 newest
    base = datetime.now(UTC) - timedelta(seconds=10)
    restamp([v4, v3, v2, v1], [base + timedelta(milliseconds=i) for i in range(4)])
    bus = LocalEventPublisher()
    result = relay.relay_batch(bus, env_id=ctx.env_id)
    assert result.published == 6 and result.failed == 0
    sent = [e for _, e in bus.events]
    assert [e["aggregateversion"] for e in sent if e["subject"] == str(row.id)] == [1, 2, 3, 4]
    assert [e["aggregateversion"] for e in sent if e["subject"] == str(other.id)] == [1, 2]


@pytest.mark.rabbitmq
def test_the_pipelined_relay_publishes_in_version_order_whatever_their_created_at(ctx, database,
                                                                                  bus):
    queue = bus.queue("#")
    rows = [make_aggregate(ctx, 1, 2, 3) for _ in range(3)]
    base = datetime.now(UTC) - timedelta(seconds=10)
    for n, agg in enumerate(rows):
        mine = [r for r in env_rows(ctx) if r.subject == str(agg.id)]
        restamp(list(reversed(mine)), [base + timedelta(milliseconds=10 * n + i)
                                       for i in range(4)])
    pub = AmqpEventPublisher(bus.url, bus.exchange)
    # batches of 5 cut through aggregates: a row picked without an earlier version is held
    # back (due again a second later), never sent before it
    t0, published = datetime.now(UTC), 0
    for sweep in range(12):
        at = t0 + timedelta(seconds=2 * sweep)
        published += OutboxRelay(pub, env_id=ctx.env_id, batch_size=5,
                                 now=lambda at=at: at).run_once().published
        if published == 12:
            break
    pub.close()
    assert published == 12
    got = [e for _, e in bus.drain(queue)]
    for agg in rows:
        assert [e["aggregateversion"] for e in got if e["subject"] == str(agg.id)] == [1, 2, 3, 4]


def test_in_version_order_keeps_each_aggregates_places_in_creation_order():
    from collections import namedtuple

    Row = namedtuple("Row", "id env_id subject aggregate_type aggregate_version created_at")
    env, t = uuid.uuid4(), datetime(2026, 1, 1, tzinfo=UTC)
    rows = [Row(uuid.uuid4(), env, "a", "x", 3, t),
            Row(uuid.uuid4(), env, "b", "x", 1, t + timedelta(1)),
            Row(uuid.uuid4(), env, "a", "x", 1, t + timedelta(2)),
            Row(uuid.uuid4(), env, "a", "x", 2, t + timedelta(3))]
    out = in_version_order(list(reversed(rows)))
    assert [(r.subject, r.aggregate_version) for r in out] == [("a", 1), ("b", 1), ("a", 2),
                                                                ("a", 3)]


def _host_clock_skewed(monkeypatch, skew):
    """Every host clock the relay could read runs `skew` ahead of the database's."""
    import pms.db.fields
    import pms.relay.audit_push
    import workers.relay

    real = pms.db.fields.utcnow

    def skewed():
        return real() + skew

    for module in (pms.db.fields, relay, workers.relay, outbox_ops, pms.relay.audit_push):
        monkeypatch.setattr(module, "utcnow", skewed, raising=False)
    return skewed


@PG_ONLY
def test_leases_and_retries_use_the_database_clock_with_a_skewed_host_clock(ctx, database,
                                                                            monkeypatch):
    skew = timedelta(hours=1)
    host = _host_clock_skewed(monkeypatch, skew)
    make_aggregate(ctx)
    before = database_now()
    assert host() - before > skew - timedelta(minutes=1)  # the host runs an hour ahead
    leases = []

    class Watching:
        def publish(self, event, *, routing_key=None):
            with unscoped():
                leases.append(OutboxEvent.get_by_id(uuid.UUID(event["id"])).lease_until)
                leases.append(max(p.expires_at for p in RelayPartition.select()
                                  if p.expires_at is not None))
            raise relay.PublishRejected("nacked by the broker")

    result = OutboxRelay(Watching(), env_id=ctx.env_id, lease_s=30).run_once()
    after = database_now()
    assert result.failed == 1
    row_lease, partition_lease = leases
    for lease in (row_lease, partition_lease):
        assert before + timedelta(seconds=30) <= lease <= after + timedelta(seconds=30)
    (row,) = env_rows(ctx)
    retry = row.next_attempt_at - relay.compute_backoff(1) * timedelta(seconds=1)
    assert before <= retry <= after  # backed off from the database's now, not the host's


@PG_ONLY
def test_a_row_written_by_a_host_whose_clock_runs_ahead_is_due_by_the_database_clock(
        ctx, database, monkeypatch):
    ahead = datetime.now(UTC) + timedelta(hours=1)
    monkeypatch.setattr(OutboxEvent.next_attempt_at, "default", lambda: ahead)
    make_aggregate(ctx)
    (row,) = env_rows(ctx)
    assert row.next_attempt_at <= database_now()
    assert relay.relay_batch(LocalEventPublisher(), env_id=ctx.env_id).published == 1


@PG_ONLY
def test_the_db_clock_follows_the_database_between_reads(database):
    clock = DbClock(resync_s=3600)
    first = clock()
    assert abs((first - database_now()).total_seconds()) < 5
    assert clock() >= first  # carried by the monotonic clock, no round trip


# -- a parked delta holds its aggregate back ---------------------------------------------

def test_a_parked_delta_blocks_its_aggregate_until_replayed_and_the_consumer_ends_right(
        ctx, database):
    row = make_aggregate(ctx, 10, 5, -3)  # total: 0 + 10 + 5 - 3 = 12
    other = make_aggregate(ctx, 7)
    consumer = VersionOrderConsumer()
    refuse_v2 = Refusing(lambda e: e["subject"] == str(row.id) and e["aggregateversion"] == 2)
    now = datetime.now(UTC)
    first = relay.relay_batch(refuse_v2, env_id=ctx.env_id, now=now, max_attempts=1)
    assert first.parked == 1
    # later on, again and again: nothing of that aggregate after its parked delta goes out
    for minutes in (2, 10, 60):
        relay.relay_batch(refuse_v2, env_id=ctx.env_id, now=now + timedelta(minutes=minutes))
    consumer.apply(refuse_v2.sent)
    mine = [e["aggregateversion"] for e in refuse_v2.sent if e["subject"] == str(row.id)]
    assert mine == [1]
    assert consumer.total[str(other.id)] == 7  # other aggregates keep flowing
    status = outbox_ops.outbox_status(env_id=ctx.env_id)
    assert status.parked == 1 and status.backlog == 2  # v3 and v4 wait behind it
    # When: the operator replays the parked delta (the bus takes it now)
    (v2,) = [r for r in env_rows(ctx) if r.parked_at is not None]
    bus = Refusing()
    later = now + timedelta(minutes=61)
    assert relay.relay_batch(bus, ids=[v2.id], now=later).published == 1
    # Then: the rows it held are due at once, and go out after it, in version order
    assert relay.relay_batch(bus, env_id=ctx.env_id, now=later).published == 2
    assert [e["aggregateversion"] for e in bus.sent] == [2, 3, 4]
    consumer.apply(bus.sent)
    assert consumer.total[str(row.id)] == 12 and consumer.last[str(row.id)] == 4


def test_requeue_of_a_parked_delta_releases_its_aggregate_too(ctx, database):
    row = make_aggregate(ctx, 10, 5)
    refuse_v2 = Refusing(lambda e: e["aggregateversion"] == 2)
    now = datetime.now(UTC)
    assert relay.relay_batch(refuse_v2, env_id=ctx.env_id, now=now, max_attempts=1).parked == 1
    relay.relay_batch(refuse_v2, env_id=ctx.env_id, now=now + timedelta(seconds=2))
    (v2,) = [r for r in env_rows(ctx) if r.parked_at is not None]
    assert outbox_ops.requeue([v2.id], now=now + timedelta(seconds=3)) == 1
    bus = Refusing()
    assert relay.relay_batch(bus, env_id=ctx.env_id, now=now + timedelta(seconds=3)).published == 2
    assert [(e["subject"], e["aggregateversion"]) for e in bus.sent] == [(str(row.id), 2),
                                                                       (str(row.id), 3)]


# -- reactions do not wait for the bus ---------------------------------------------------

def test_reactions_run_when_the_bus_refuses_the_event_and_are_not_repeated_after(ctx, database):
    make_aggregate(ctx)
    ran = []
    refusing = Refusing(lambda e: True)
    now = datetime.now(UTC)
    relay_ = OutboxRelay(refusing, env_id=ctx.env_id, now=lambda: now,
                         subscribers={CREATED: [ran.append]})
    totals = relay_.sweep()
    assert (totals.published, totals.failed, totals.dispatched) == (0, 1, 1)
    (row,) = env_rows(ctx)
    assert row.published_at is None and row.dispatched_at is not None
    # the bus takes it later: published, its reaction not run again
    refusing.refuse = lambda e: False
    now += timedelta(seconds=relay.MAX_BACKOFF_S + 1)
    totals = relay_.sweep()
    relay_.release()
    assert (totals.published, totals.dispatched) == (1, 0)
    assert [e["id"] for e in ran] == [str(row.id)]
    (row,) = env_rows(ctx)
    assert row.published_at is not None and row.dispatched_at is not None


def test_reactions_run_while_the_broker_is_down(ctx, database):
    make_aggregate(ctx)
    ran = []
    relay_ = OutboxRelay(Down(), env_id=ctx.env_id, subscribers={CREATED: [ran.append]})
    totals = relay_.run_once()
    assert totals.broker_error and totals.published == 0 and totals.dispatched == 1
    (row,) = env_rows(ctx)
    assert [e["id"] for e in ran] == [str(row.id)] and row.published_at is None


def test_a_failing_reaction_stops_the_pass_and_leaves_the_rest_due(ctx, database):
    for _ in range(3):
        make_aggregate(ctx)
    calls = []

    def down(event):
        calls.append(event["id"])
        raise ConnectionError("the worker's broker is down")

    now = datetime.now(UTC)
    relay_ = OutboxRelay(Down(), env_id=ctx.env_id, now=lambda: now,
                         subscribers={CREATED: [down]})
    totals = relay_.run_once()
    assert (totals.dispatched, totals.dispatch_failed) == (0, 1) and len(calls) == 1
    rows = env_rows(ctx)
    assert sorted(r.dispatch_attempts for r in rows) == [0, 0, 1]
    ok = []
    later = OutboxRelay(LocalEventPublisher(), env_id=ctx.env_id, now=lambda: now,
                        subscribers={CREATED: [ok.append]})
    assert later.run_once().dispatched == 2  # the two left due (the third backs off)


def test_replay_reactions_reruns_only_parked_reactions_without_a_publish(ctx, database):
    make_aggregate(ctx)
    now = datetime.now(UTC)

    def broken(event):
        raise RuntimeError("bad template")

    relay_ = OutboxRelay(LocalEventPublisher(), env_id=ctx.env_id, now=lambda: now,
                         subscribers={CREATED: [broken]})
    for _ in range(relay.MAX_DISPATCH_ATTEMPTS):
        relay_.sweep()
        now += timedelta(seconds=relay.MAX_BACKOFF_S + 1)
    relay_.release()
    (row,) = env_rows(ctx)
    assert row.published_at is not None and row.dispatch_next_at is None
    assert row.dispatch_attempts == relay.MAX_DISPATCH_ATTEMPTS
    assert [r["state"] for r in outbox_ops.list_events(
        outbox_ops.EventFilter(env_id=ctx.env_id, parked=True))] == ["reactions_parked"]
    assert outbox_ops.parked_reactions([row.id]) == ([row.id], [row.id])
    ran = []
    assert relay.replay_reactions([row.id], {CREATED: [ran.append]}, now=now) == (1, 0)
    assert [e["id"] for e in ran] == [str(row.id)]
    (after,) = env_rows(ctx)
    assert after.published_at == row.published_at  # not published again
    assert after.dispatched_at is not None
    assert relay.replay_reactions([row.id], {CREATED: [ran.append]}, now=now) == (0, 0)


# -- streams that share a subject ----------------------------------------------------------------

def _stream_rows(ctx, subject, aggregate, versions, *, base):
    """Outbox rows of one stream, as the writers leave them (versions given, created in order)."""
    from pms.models.platform import outbox_partition

    rows = [{"id": uuid.uuid4(), "env_id": ctx.env_id, "type": f"hotel:pms:{aggregate}:updated",
             "subject": subject, "aggregate_type": aggregate, "aggregate_version": v,
             "idempotency_key": f"{aggregate}:{subject}:{v}", "data": {"v": v}, "time": base,
             "created_at": base + timedelta(milliseconds=v), "next_attempt_at": base,
             "partition": outbox_partition(subject)} for v in versions]
    with unit_of_work(ctx):
        OutboxEvent.insert_many(rows).execute()


def _sent(bus, aggregate):
    return [e["aggregateversion"] for e in bus.sent if e["type"] == f"hotel:pms:{aggregate}:updated"]


def test_a_parked_inventory_event_does_not_stall_the_room_types_ari_stream(ctx, database):
    room_type = str(uuid.uuid4())  # one subject, two counters
    now = datetime.now(UTC)
    _stream_rows(ctx, room_type, "inventory", [1, 2], base=now - timedelta(seconds=5))
    _stream_rows(ctx, room_type, "ari", [1, 2, 3], base=now - timedelta(seconds=4))
    bus = Refusing(lambda e: e["type"] == "hotel:pms:inventory:updated"
                   and e["aggregateversion"] == 1)
    assert relay.relay_batch(bus, env_id=ctx.env_id, now=now, max_attempts=1).parked == 1
    for minutes in (2, 10):
        relay.relay_batch(bus, env_id=ctx.env_id, now=now + timedelta(minutes=minutes))
    # the ARI stream went out whole, in order; the inventory stream waits behind its parked v1
    assert _sent(bus, "ari") == [1, 2, 3] and _sent(bus, "inventory") == []
    (parked,) = [r for r in env_rows(ctx) if r.parked_at is not None]
    ok = Refusing()
    later = now + timedelta(minutes=11)
    assert relay.relay_batch(ok, ids=[parked.id], now=later).published == 1
    assert relay.relay_batch(ok, env_id=ctx.env_id, now=later).published == 1
    assert _sent(ok, "inventory") == [1, 2] and _sent(ok, "ari") == []


def test_streams_of_one_subject_go_out_each_in_its_own_version_order(ctx, database):
    subject = str(uuid.uuid4())
    now = datetime.now(UTC)
    # interleaved in creation order, each counter from 1: the same versions on two streams
    _stream_rows(ctx, subject, "room_type", [1, 2, 3], base=now - timedelta(seconds=5))
    _stream_rows(ctx, subject, "ari", [1, 2, 3, 4], base=now - timedelta(seconds=5))
    bus = Refusing(lambda e: e["type"] == "hotel:pms:room_type:updated"
                   and e["aggregateversion"] == 2)
    result = relay.relay_batch(bus, env_id=ctx.env_id, now=now)
    # a refused room_type v2 stops its own stream's v3 in this batch, never the ARI stream
    assert result.failed == 1 and _sent(bus, "ari") == [1, 2, 3, 4]
    assert _sent(bus, "room_type") == [1]
    relay.relay_batch(bus := Refusing(), env_id=ctx.env_id, now=now + timedelta(minutes=2))
    assert _sent(bus, "room_type") == [2, 3]


def test_in_version_order_orders_each_stream_of_a_subject_apart():
    from collections import namedtuple

    Row = namedtuple("Row", "id env_id subject aggregate_type aggregate_version created_at")
    env, t = uuid.uuid4(), datetime(2026, 1, 1, tzinfo=UTC)
    rows = [Row(uuid.uuid4(), env, "a", "ari", 2, t),
            Row(uuid.uuid4(), env, "a", "room_type", 1, t + timedelta(1)),
            Row(uuid.uuid4(), env, "a", "ari", 1, t + timedelta(2))]
    out = in_version_order(list(reversed(rows)))
    assert [(r.aggregate_type, r.aggregate_version) for r in out] == [
        ("ari", 1), ("room_type", 1), ("ari", 2)]
