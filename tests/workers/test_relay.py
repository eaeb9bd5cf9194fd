"""The outbox relay against the real RabbitMQ: ids, order, confirms, returns, backoff."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from pms.db.uow import read_scope
from pms.models import OutboxEvent
from pms.relay import outbox
from tests.factories import make_profile, make_property
from tests.workers.amqp import amqp_url, via
from workers.publisher import AmqpEventPublisher, LocalEventPublisher
from workers.relay import OutboxRelay

pytestmark = pytest.mark.rabbitmq


def rows(ctx):
    with read_scope(ctx):
        return list(OutboxEvent.select().order_by(OutboxEvent.created_at, OutboxEvent.id))


def publisher_for(bus, **kw):
    return AmqpEventPublisher(bus.url, bus.exchange, **kw)


def test_relay_publishes_cloudevents_in_order_and_marks_after_confirm(ctx, database, bus):
    queue = bus.queue("hotel.pms.#")
    prop = make_property(ctx)
    for _ in range(3):
        make_profile(ctx, prop.id)
    pub = publisher_for(bus)
    result = outbox.relay_batch(pub, env_id=ctx.env_id)
    pub.close()
    assert result.published == 4 and result.failed == 0
    got = bus.drain(queue)
    expected = rows(ctx)
    assert [p.message_id for p, _ in got] == [str(r.id) for r in expected]
    props, event = got[0]
    assert props.delivery_mode == 2
    assert event["id"] == props.message_id and event["type"] == "hotel:pms:property:created"
    assert event["specversion"] == "1.0" and event["source"] == "hotel-pms"
    assert event["envid"] == str(ctx.env_id) and event["aggregateversion"] == 1
    assert all(r.published_at is not None for r in rows(ctx))
    # Nothing is due any more: a second sweep publishes nothing.
    assert outbox.relay_batch(publisher_for(bus), env_id=ctx.env_id).claimed == 0


def test_unroutable_rows_are_delivered_not_backed_off_and_later_ones_reach_a_bound_queue(
        ctx, database, bus):
    # Was (before the relay healed): an event no queue was bound for came back unroutable, backed off
    # and, after MAX_ATTEMPTS, parked. Now the broker accepted it: the bus has no subscriber
    # yet, so it is delivered, never retried, never parked.
    make_property(ctx)
    pub = publisher_for(bus)
    result = outbox.relay_batch(pub, env_id=ctx.env_id)
    assert result.published == 1 and result.failed == 0 and pub.unroutable == 1
    (row,) = rows(ctx)
    assert row.published_at is not None and row.attempts == 0 and row.last_error is None
    assert row.parked_at is None
    assert outbox.relay_batch(pub, env_id=ctx.env_id).claimed == 0  # nothing to retry
    # once a queue is bound, the next events reach it (through the pipelined path too)
    queue = bus.queue("hotel.pms.property.*")
    make_property(ctx)
    relay = OutboxRelay(pub, env_id=ctx.env_id)
    assert relay.run_once().published == 1 and pub.unroutable == 1
    pub.close()
    assert [p.message_id for p, _ in bus.drain(queue)] == [str(rows(ctx)[1].id)]
    # the one-message path too
    single = publisher_for(bus)
    single.publish({"id": str(uuid.uuid4()), "type": "hotel:pms:nobody:listens"})
    assert single.unroutable == 1
    single.close()


def test_broker_unreachable_leaves_rows_untouched(ctx, database):
    make_property(ctx)
    pub = AmqpEventPublisher("amqp://guest:guest@127.0.0.1:1/%2F", "nowhere", connect_timeout=1)
    result = outbox.relay_batch(pub, env_id=ctx.env_id)
    assert result.broker_error and result.published == 0
    (row,) = rows(ctx)
    assert row.published_at is None and row.attempts == 0


def test_failing_subscriber_retries_the_reaction_only_and_never_republishes(ctx, database, bus):
    # Was: a failing subscriber backed the row off, so the external event went out again on
    # every retry. Now reactions have their own cursor.
    queue = bus.queue("#")
    make_property(ctx)
    calls = []

    def flaky(event):
        calls.append(event["id"])
        if len(calls) == 1:
            raise RuntimeError("enqueue failed")

    clock = [datetime.now(UTC)]
    relay = OutboxRelay(publisher_for(bus), env_id=ctx.env_id, now=lambda: clock[0],
                        subscribers={"hotel:pms:property:created": [flaky]})
    first = relay.sweep()
    assert (first.published, first.dispatched, first.dispatch_failed) == (1, 0, 1)
    (row,) = rows(ctx)
    assert row.published_at is not None and row.dispatched_at is None
    assert row.dispatch_attempts == 1 and "enqueue failed" in row.last_error
    assert relay.sweep().dispatched == 0  # backing off
    clock[0] += timedelta(seconds=outbox.MAX_BACKOFF_S + 1)
    second = relay.sweep()
    relay.release()
    assert (second.claimed, second.published, second.dispatched) == (0, 0, 1)
    assert calls == [str(row.id), str(row.id)]
    assert [p.message_id for p, _ in bus.drain(queue)] == [str(row.id)]  # published once
    (row,) = rows(ctx)
    assert row.dispatched_at is not None


def test_relay_run_once_drains_in_batches_and_pushes_audit(ctx, database, bus):
    queue = bus.queue("#")
    prop = make_property(ctx)
    for _ in range(4):
        make_profile(ctx, prop.id)
    relay = OutboxRelay(publisher_for(bus), batch_size=2, push_audit=True, env_id=ctx.env_id)
    totals = relay.run_once()
    assert totals.published == 5 and totals.batches == 3
    assert totals.audit_pushed == 5
    got = bus.drain(queue)
    types = [e["type"] for _, e in got]
    assert types.count("hotel:pms:audit:recorded") == 5


def test_local_publisher_confirms_at_once(ctx, database):
    make_property(ctx)
    pub = LocalEventPublisher()
    assert outbox.relay_batch(pub, env_id=ctx.env_id).published == 1
    assert pub.events[0][0] == "hotel.pms.property.created"


def test_amqp_url_fixture_is_the_test_broker():
    assert amqp_url().startswith("amqp://")


def _event(type_):
    return {"id": str(uuid.uuid4()), "type": type_, "envid": str(uuid.uuid4()),
            "idempotencykey": "k", "data": {}}


def test_pipelined_batch_reports_each_outcome_in_order(bus):
    queue = bus.queue("hotel.pms.property.*")
    pub = publisher_for(bus)
    events = [_event("hotel:pms:property:created"), _event("hotel:pms:profile:created"),
              _event("hotel:pms:property:updated")]
    # the audit push's mode: an unroutable message is refused (only there)
    outcomes = pub.publish_many(events, require_route=True)
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], outbox.PublishRejected)
    assert [p.message_id for p, _ in bus.drain(queue)] == [events[0]["id"], events[2]["id"]]
    # the outbox's: the unroutable one is delivered too (no subscriber yet)
    again = [_event("hotel:pms:property:created"), _event("hotel:pms:profile:created")]
    assert pub.publish_many(again) == [None, None] and pub.unroutable == 1
    pub.close()
    assert [p.message_id for p, _ in bus.drain(queue)] == [again[0]["id"]]


def test_a_stalled_broker_is_given_up_on_within_the_confirm_timeout(bus, proxy):
    bus.queue("#")
    pub = AmqpEventPublisher(via(bus.url, proxy.port), bus.exchange, confirm_timeout=1.5,
                             heartbeat=30)
    assert pub.publish_many([_event("hotel:pms:property:created")]) == [None]
    proxy.stall()
    started = time.monotonic()
    outcomes = pub.publish_many([_event("hotel:pms:property:created")])
    assert isinstance(outcomes[0], outbox.BrokerUnavailable)
    assert time.monotonic() - started < 5
    proxy.restore()
    pub.close()


def test_purge_deletes_only_published_rows_past_retention(ctx, database):
    from pms.api.idempotency import purge_expired  # noqa: F401 - the per-env purge it relies on
    from pms.db.scope import tenant_scope
    from pms.models import IdempotencyRecord

    make_property(ctx)
    make_property(ctx)
    make_property(ctx)
    first, second, third = rows(ctx)
    old = datetime.now(UTC) - timedelta(days=8)
    with read_scope(ctx):
        OutboxEvent.update(published_at=old, dispatched_at=old).where(
            OutboxEvent.id == first.id).execute()
        # parked rows and rows whose reactions are still to run are kept
        OutboxEvent.update(parked_at=old).where(OutboxEvent.id == second.id).execute()
        OutboxEvent.update(published_at=old, dispatch_next_at=old).where(
            OutboxEvent.id == third.id).execute()
    with tenant_scope(ctx.env_id), database.atomic():
        IdempotencyRecord.create(key="k-old", fingerprint="f", expires_at=old)
        IdempotencyRecord.create(key="k-new", fingerprint="f",
                                 expires_at=datetime.now(UTC) + timedelta(hours=1))
    relay = OutboxRelay(LocalEventPublisher(), env_id=ctx.env_id, retention=timedelta(days=7))
    purged = relay.purge()
    assert purged["outbox_rows"] >= 1 and purged["idempotency_records"] >= 1
    assert [r.id for r in rows(ctx)] == [second.id, third.id]
    with read_scope(ctx):
        assert [r.key for r in IdempotencyRecord.select()] == ["k-new"]


def test_purge_deletes_kiosk_sessions_only_once_dead_past_retention(ctx, database):
    from pms.db.scope import tenant_scope
    from pms.models import KioskSession
    from pms.services.kiosk.kiosk_sessions import MAX_AGE, SESSION_RETENTION

    hotel = make_property(ctx)
    now = datetime.now(UTC)
    edge = MAX_AGE + SESSION_RETENTION
    ages = {"live": timedelta(0), "dead-recent": MAX_AGE + timedelta(minutes=1),
            "kept-at-edge": edge - timedelta(minutes=1), "old": edge + timedelta(minutes=1)}
    with tenant_scope(ctx.env_id), database.atomic():
        for name, age in ages.items():
            KioskSession.create(terminal=f"t-{name}", property=hotel.id, token_digest=name,
                                last_seen_at=now - age, created_at=now - age)
    relay = OutboxRelay(LocalEventPublisher(), env_id=ctx.env_id, retention=timedelta(days=7))
    assert relay.purge()["kiosk_sessions"] >= 1
    with read_scope(ctx):
        left = sorted(r.token_digest for r in KioskSession.select()
                      .where(KioskSession.env_id == ctx.env_id))
    assert left == ["dead-recent", "kept-at-edge", "live"]


def test_audit_push_stops_at_the_first_row_nobody_takes(ctx, database, bus):
    make_property(ctx)
    make_property(ctx)
    pub = publisher_for(bus)
    first = outbox.push_audit_batch(pub, env_id=ctx.env_id)
    assert (first.published, first.failed) == (0, 1)
    queue = bus.queue("audit.pms.#")
    second = outbox.push_audit_batch(pub, env_id=ctx.env_id)
    pub.close()
    assert second.published == 2
    assert len(bus.drain(queue)) == 2


def test_a_confirm_wait_ends_when_the_last_confirm_arrives(bus):
    # pika's process_data_events(time_limit) returns early only for BlockingChannel events, not
    # for the confirm callbacks of the pipelined channel: each batch's wait used to run out its
    # whole slice after the last confirm (50 ms a batch, half the relay's time). With a slice
    # of 5 s the difference is seconds, not milliseconds, so a loaded machine cannot blur it.
    bus.queue("#")
    pub = publisher_for(bus)
    pub.confirm_slice_s = 5.0
    try:
        assert pub.publish_many([_event("hotel:pms:property:created")]) == [None]  # connected
        started = time.monotonic()
        for _ in range(3):
            ticket = pub.start_many([_event("hotel:pms:property:created") for _ in range(20)])
            assert pub.finish_many(ticket) == [None] * 20
        assert time.monotonic() - started < 4.0
    finally:
        pub.close()
