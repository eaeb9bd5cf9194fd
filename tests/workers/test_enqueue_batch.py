"""The relay's reactions send their actor messages together (workers.enqueue), on the real
RabbitMQ: gathered during the pass, published on the relay's pipelined channel at its end, to
the queues Dramatiq's own enqueue uses, decodable by Dramatiq, with the middleware applied; a
message the broker cannot route fails its row (the rows after it stay due), and its queue is
declared again before the next try."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import dramatiq
import pytest
from dramatiq import Message
from dramatiq.brokers.rabbitmq import dq_name, xq_name
from dramatiq.brokers.stub import StubBroker

from pms.db.uow import read_scope
from pms.models import OutboxEvent
from pms.platform import trace
from pms.relay.core import Reactions
from pms.relay.dispatch import dispatch_rows
from tests.factories import make_property
from tests.workers.amqp import amqp_url, via
from workers.enqueue import BatchingBroker, EnqueueBatch, reaction_batching
from workers.publisher import AmqpEventPublisher, LocalEventPublisher
from workers.tracing import TraceMessages

pytestmark = pytest.mark.rabbitmq

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def setup(bus):
    """A BatchingBroker with one actor on a queue of its own, and the relay's publisher."""
    broker = BatchingBroker(url=amqp_url(), confirm_delivery=True)
    broker.add_middleware(TraceMessages())
    queue = f"pms-test-enq-{uuid.uuid4().hex[:10]}"

    @dramatiq.actor(broker=broker, queue_name=queue, actor_name=f"act_{queue}")
    def act(value):  # pragma: no cover - never run here: the test reads the queue
        return value

    publisher = AmqpEventPublisher(bus.url, bus.exchange)
    yield broker, act, queue, publisher
    publisher.close()
    ch = bus.ch
    for name in (queue, dq_name(queue), xq_name(queue)):
        ch.queue_delete(name)
    broker.close()


def _read(bus, queue):
    out = []
    while True:
        method, props, body = bus.ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append((props, Message.decode(body)))


def test_messages_are_gathered_then_sent_together_where_dramatiq_puts_them(bus, setup):
    broker, act, queue, publisher = setup
    batch = EnqueueBatch(publisher)
    with trace.use(TRACE), batch.row("row-1"):
        act.send(1)
        act.send_with_options(args=(2,), delay=60_000)
    with batch.row("row-2"):
        act.send(3)
    broker.declare_queue(queue, ensure=True)
    assert _read(bus, queue) == []  # gathered, not sent yet
    assert batch.flush() == {}
    now = [m for _p, m in _read(bus, queue)]
    later = [m for _p, m in _read(bus, dq_name(queue))]
    assert [m.args for m in now] == [(1,), (3,)]
    assert [m.args for m in later] == [(2,)] and later[0].options["eta"] > 0
    assert now[0].options["traceparent"] == TRACE and "traceparent" not in now[1].options
    assert batch.flush() == {}  # nothing gathered: nothing to send


def test_outside_a_pass_the_broker_enqueues_as_dramatiq_does(bus, setup):
    broker, act, queue, _publisher = setup
    act.send(7)
    assert [m.args for _p, m in _read(bus, queue)] == [(7,)]


def test_an_unroutable_message_fails_its_row_and_its_queue_is_declared_again(bus, setup):
    broker, act, queue, publisher = setup
    broker.declare_queue(queue, ensure=True)
    bus.ch.queue_delete(queue)  # the broker still thinks it declared it
    batch = EnqueueBatch(publisher)
    with batch.row("lost"):
        act.send(1)
    refused = batch.flush()
    assert list(refused) == ["lost"] and "unroutable" in refused["lost"]
    with batch.row("again"):
        act.send(2)  # declares the queue again first
    assert batch.flush() == {}
    assert [m.args for _p, m in _read(bus, queue)] == [(2,)]


def test_a_batch_of_reactions_rides_beside_a_batch_of_events_in_flight(bus, setup):
    broker, act, queue, publisher = setup
    events_queue = bus.queue("hotel.pms.#")
    event = {"id": str(uuid.uuid4()), "type": "hotel:pms:test:sent", "specversion": "1.0"}
    in_flight = publisher.start_many([event])
    batch = EnqueueBatch(publisher)
    with batch.row("r"):
        act.send(5)
    assert batch.flush() == {}
    assert publisher.finish_many(in_flight) == [None]
    assert [e["id"] for _p, e in bus.drain(events_queue)] == [event["id"]]
    assert [m.args for _p, m in _read(bus, queue)] == [(5,)]


def test_dispatch_marks_the_refused_row_failed_and_leaves_the_rest_due(ctx, database, bus,
                                                                       setup):
    broker, act, queue, publisher = setup
    for _ in range(3):
        make_property(ctx)
    with read_scope(ctx):
        rows = list(OutboxEvent.select().where(OutboxEvent.type == "hotel:pms:property:created")
                    .order_by(OutboxEvent.created_at, OutboxEvent.id))
    assert len(rows) == 3
    gone = f"{queue}-gone"

    @dramatiq.actor(broker=broker, queue_name=gone, actor_name=f"act_{gone}")
    def lost(value):  # pragma: no cover - never run
        return value

    broker.declare_queue(queue, ensure=True)
    broker.declare_queue(gone, ensure=True)
    for name in (gone, dq_name(gone), xq_name(gone)):
        bus.ch.queue_delete(name)  # the broker still thinks it declared them
    sent = []

    def react(event):
        sent.append(event["id"])
        (lost if len(sent) == 2 else act).send(event["id"])  # the second row's finds no queue

    reactions = Reactions({"hotel:pms:property:created": [react]},
                          batching=lambda: EnqueueBatch(publisher))
    done, failed = dispatch_rows(rows, reactions, now=datetime.now(UTC))
    assert (done, failed) == (1, 1)
    with read_scope(ctx):
        after = {r.id: r for r in OutboxEvent.select().where(
            OutboxEvent.id.in_([r.id for r in rows]))}
    first, second, third = (after[r.id] for r in rows)
    assert first.dispatched_at is not None
    assert second.dispatched_at is None and second.dispatch_attempts == 1
    assert "unroutable" in second.last_error
    assert third.dispatched_at is None and third.dispatch_attempts == 0  # untried, due again
    assert [m.args for _p, m in _read(bus, queue)] == [(str(rows[0].id),), (str(rows[2].id),)]
    for name in (gone, dq_name(gone), xq_name(gone)):
        bus.ch.queue_delete(name)  # declared again after the refusal


def test_batching_only_for_rabbitmq_on_both_sides(bus, setup):
    broker, _act, _queue, publisher = setup
    assert reaction_batching(publisher, broker) is not None
    assert reaction_batching(LocalEventPublisher(), broker) is None
    assert reaction_batching(publisher, StubBroker()) is None


def test_a_message_nobody_confirms_is_refused_not_lost(bus, setup, proxy):
    broker, act, queue, _publisher = setup
    broker.declare_queue(queue, ensure=True)
    cut = AmqpEventPublisher(via(bus.url, proxy.port), bus.exchange, confirm_timeout=2.0)
    batch = EnqueueBatch(cut)
    with batch.row("r"):
        act.send(1)
    proxy.cut()
    refused = batch.flush()
    assert list(refused) == ["r"]
    cut.close()
